#!/usr/bin/env python3
"""Writes a character-level token dataset from text files, as nanoGPT's prepare scripts do:
every byte is a token id (a vocabulary of 256), stored as little-endian uint16, the first
90% of the text in OUT/train.bin and the rest in OUT/val.bin (burst train --dataset
tokens:OUT/train.bin --val-dataset tokens:OUT/val.bin).

  text_tokens.py OUT FILE...     e.g. text_tokens.py /tmp/licences /usr/share/common-licenses/*

Standard library only.
"""

import array
import os
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: text_tokens.py OUT FILE...")
    out = sys.argv[1]
    text = b""
    for path in sorted(set(os.path.realpath(p) for p in sys.argv[2:])):  # each file once
        with open(path, "rb") as f:
            text += f.read()
    if len(text) < 1000:
        sys.exit(f"text_tokens.py: {len(text)} bytes of text is too little")
    cut = len(text) * 9 // 10
    os.makedirs(out, exist_ok=True)
    for name, part in (("train.bin", text[:cut]), ("val.bin", text[cut:])):
        tokens = array.array("H", list(part))  # one uint16 per byte (bytes would be read as raw pairs)
        if sys.byteorder != "little":
            tokens.byteswap()
        with open(os.path.join(out, name), "wb") as f:
            tokens.tofile(f)
    print(f"{len(text)} bytes: {cut} tokens in {out}/train.bin, {len(text) - cut} in {out}/val.bin")


if __name__ == "__main__":
    main()
