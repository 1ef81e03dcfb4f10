#pragma once
// Strong types for time, sizes and bandwidth, so a microsecond never meets a millisecond
// and a byte count never meets a FLOP count. Time is held in seconds (double).
#include <cstdint>

namespace burst {

class Seconds {
 public:
  constexpr Seconds() = default;
  constexpr explicit Seconds(double seconds) : seconds_(seconds) {}
  static constexpr Seconds from_ms(double ms) { return Seconds(ms * 1e-3); }
  static constexpr Seconds from_us(double us) { return Seconds(us * 1e-6); }

  constexpr double s() const { return seconds_; }
  constexpr double ms() const { return seconds_ * 1e3; }
  constexpr double us() const { return seconds_ * 1e6; }

  constexpr Seconds operator+(Seconds other) const { return Seconds(seconds_ + other.seconds_); }
  constexpr Seconds operator-(Seconds other) const { return Seconds(seconds_ - other.seconds_); }
  constexpr Seconds operator*(double factor) const { return Seconds(seconds_ * factor); }
  constexpr Seconds operator/(double divisor) const { return Seconds(seconds_ / divisor); }
  constexpr double operator/(Seconds other) const { return seconds_ / other.seconds_; }
  Seconds& operator+=(Seconds other) {
    seconds_ += other.seconds_;
    return *this;
  }
  constexpr bool operator<(Seconds other) const { return seconds_ < other.seconds_; }
  constexpr bool operator>(Seconds other) const { return seconds_ > other.seconds_; }
  constexpr bool operator<=(Seconds other) const { return seconds_ <= other.seconds_; }
  constexpr bool operator>=(Seconds other) const { return seconds_ >= other.seconds_; }
  constexpr bool operator==(Seconds other) const { return seconds_ == other.seconds_; }
  constexpr bool operator!=(Seconds other) const { return seconds_ != other.seconds_; }

 private:
  double seconds_ = 0;
};

constexpr Seconds operator*(double factor, Seconds time) { return time * factor; }

// A size in bytes (message sizes, memory). Double so fractions of a split stay exact enough.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(double bytes) : bytes_(bytes) {}
  constexpr double value() const { return bytes_; }
  constexpr Bytes operator+(Bytes other) const { return Bytes(bytes_ + other.bytes_); }
  constexpr Bytes operator*(double factor) const { return Bytes(bytes_ * factor); }
  constexpr Bytes operator/(double divisor) const { return Bytes(bytes_ / divisor); }
  Bytes& operator+=(Bytes other) {
    bytes_ += other.bytes_;
    return *this;
  }
  constexpr bool operator==(Bytes other) const { return bytes_ == other.bytes_; }
  constexpr bool operator<(Bytes other) const { return bytes_ < other.bytes_; }

 private:
  double bytes_ = 0;
};

// Link or memory bandwidth in bytes per second.
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  constexpr explicit Bandwidth(double bytes_per_second) : bytes_per_second_(bytes_per_second) {}
  static constexpr Bandwidth gigabytes_per_s(double gb) { return Bandwidth(gb * 1e9); }
  static constexpr Bandwidth gigabits_per_s(double gbit) { return Bandwidth(gbit * 1e9 / 8); }
  constexpr double bytes_per_second() const { return bytes_per_second_; }

 private:
  double bytes_per_second_ = 0;
};

// Time to move `size` at `bandwidth` (no latency).
constexpr Seconds operator/(Bytes size, Bandwidth bandwidth) {
  return Seconds(size.value() / bandwidth.bytes_per_second());
}

}  // namespace burst
