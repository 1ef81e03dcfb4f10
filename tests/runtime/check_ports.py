#!/usr/bin/env python3
"""Lists the TCP sockets of a process tree from /proc/net/tcp and /proc/net/tcp6.

usage: check_ports.py ROOT_PID

Prints one line per socket owned by ROOT_PID or its descendants: "STATE ADDRESS:PORT",
STATE being LISTEN or OTHER, the address in the usual text form. Exits 0; the caller
decides what is allowed.
"""
import ipaddress
import os
import socket
import struct
import sys


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def socket_inodes(pids):
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue  # the process ended meanwhile
    return inodes


def address(hex_address, family):
    # /proc/net/tcp* holds addresses as native-endian 32-bit words in hex.
    raw = bytes.fromhex(hex_address)
    words = [struct.pack("=I", struct.unpack(">I", raw[i:i + 4])[0]) for i in range(0, len(raw), 4)]
    return ipaddress.ip_address(socket.inet_ntop(family, b"".join(words)))


def main():
    inodes = socket_inodes(descendants(int(sys.argv[1])))
    for path, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = open(path).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if inode not in inodes:
                continue
            host, port = local.split(":")
            print(f"{'LISTEN' if state == '0A' else 'OTHER'} {address(host, family)}:{int(port, 16)}")


if __name__ == "__main__":
    main()
