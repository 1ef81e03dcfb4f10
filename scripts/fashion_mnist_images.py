#!/usr/bin/env python3
"""Writes Fashion-MNIST (Debian's dataset-fashion-mnist IDX files) as image folders of PNG
files, one sub-folder per class, as users keep their own images:

  OUT/train/<class>/<index>.png   60,000 images
  OUT/test/<class>/<index>.png    10,000 images

burst train --dataset images:OUT/train --val-dataset images:OUT/test then reads them.

  fashion_mnist_images.py OUT [--idx-dir DIR] [--per-split N]
      --idx-dir: /usr/share/datasets/fashion-mnist; --per-split: the first N of each split only

Standard library only: PNG is a signature and zlib-compressed chunks (8-bit greyscale).
"""

import argparse
import gzip
import os
import struct
import zlib

CLASSES = ["0-tshirt", "1-trouser", "2-pullover", "3-dress", "4-coat",
           "5-sandal", "6-shirt", "7-sneaker", "8-bag", "9-boot"]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def png(width, height, pixels):
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    rows = b"".join(b"\x00" + pixels[y * width:(y + 1) * width] for y in range(height))  # filter 0
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def write_split(out, idx_dir, prefix, name, limit):
    (count, height, width), pixels = read_idx(f"{idx_dir}/{prefix}-images-idx3-ubyte.gz")
    count = min(count, limit) if limit else count
    _, labels = read_idx(f"{idx_dir}/{prefix}-labels-idx1-ubyte.gz")
    for label in CLASSES:
        os.makedirs(os.path.join(out, name, label), exist_ok=True)
    size = height * width
    for i in range(count):
        path = os.path.join(out, name, CLASSES[labels[i]], f"{i:05d}.png")
        with open(path, "wb") as f:
            f.write(png(width, height, pixels[i * size:(i + 1) * size]))
    print(f"wrote {count} images to {out}/{name}")


def main():
    parser = argparse.ArgumentParser(description="Fashion-MNIST as PNG class folders")
    parser.add_argument("out")
    parser.add_argument("--idx-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--per-split", type=int, default=0)
    args = parser.parse_args()
    write_split(args.out, args.idx_dir, "train", "train", args.per_split)
    write_split(args.out, args.idx_dir, "t10k", "test", args.per_split)


if __name__ == "__main__":
    main()
