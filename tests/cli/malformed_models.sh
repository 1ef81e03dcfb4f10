#!/usr/bin/env bash
# Usage: malformed_models.sh BURST_BINARY CORPUS_DIR
#
# Feeds every CORPUS_DIR/*.json to `burst model show` (and a few to `burst model export`),
# plus a directory, nonexistent paths, bad zoo options and bad command lines. Each must be
# refused the same way: exit code exactly 2, nothing on stdout, and exactly one non-empty
# line on stderr starting with "burst: error: " (no sanitizer report, no abort), within
# 20 seconds. Exits 1 listing every input that broke the rule.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY CORPUS_DIR" 2 "$@"
corpus=$2
corpus_files "$corpus" 40

# --- the corpus, through `model show` ------------------------------------------------------
for file in "${files[@]}"; do
  refused "$(basename "$file")" model show "$file"
done
# The same files must be refused by --json too (the report is not even started).
for name in cycle_three_layers.json truncated_mid_document.json invalid_utf8_in_name.json; do
  if [ -f "$corpus/$name" ]; then
    refused "$name (show --json)" model show --json "$corpus/$name"
  fi
done

# --- `model export` must refuse before writing anything ------------------------------------
for name in cycle_two_layers.json empty_file.json deep_nesting_arrays.json tied_shape_mismatch.json \
            out_channels_2_pow_62.json; do
  if [ -f "$corpus/$name" ]; then
    rm -f "$work/exported.json"
    refused "$name (export)" model export "$corpus/$name" -o "$work/exported.json"
    if [ -e "$work/exported.json" ]; then
      failures=$((failures + 1))
      echo "FAIL: $name (export): wrote $work/exported.json although the model was refused"
    fi
  fi
done

# --- paths that are not model files ---------------------------------------------------------
mkdir -p "$work/dir.json"
refused "nonexistent path" model show "$work/does-not-exist.json"
refused "nonexistent path, no .json" model show "$work/does-not-exist"
refused "nonexistent relative name" model show no_such_model_or_file
refused "directory path" model show "$work"
refused "directory named *.json" model show "$work/dir.json"
refused "corpus directory" model show "$corpus"
refused "/dev/null" model show /dev/null
refused "nonexistent path (export)" model export "$work/does-not-exist.json" -o "$work/x.json"
refused "export to a directory" model export fmnist_cnn -o "$work/dir.json"
refused "export into a missing directory" model export fmnist_cnn -o "$work/missing/x.json"

# --- files that are not ONNX models (lib/graph/test/onnx_import_test.cpp covers the graph
# errors: cycles, missing initializers, unknown ops, dynamic shapes, external data) --------
printf '' > "$work/empty.onnx"
printf 'not a protobuf at all \xff\xfe\x00\x01' > "$work/text.onnx"
printf '\x08\x07\x12\x04burst\x3a\xff\xff\xff\xff\x0f' > "$work/truncated.onnx"  # a field longer than the file
printf '{"format": "burst.model", "version": 1, "layers": []}' > "$work/json_named.onnx"
mkdir -p "$work/dir.onnx"
for name in empty.onnx text.onnx truncated.onnx json_named.onnx dir.onnx does_not_exist.onnx; do
  refused "$name" model show "$work/$name"
  refused "$name (import)" model import "$work/$name" -o "$work/x.json"
done
refused "import of a JSON model file" model import "$corpus/cycle_two_layers.json" -o "$work/x.json"
refused "import without -o" model import "$work/text.onnx"

# --- ONNX models whose names are not UTF-8 ---------------------------------------------------
# Written byte by byte in protobuf's wire format, so no onnx package is needed:
# `varint N V` is integer field N with value V (< 128); `field N BYTES` is the length-delimited
# field N (BYTES under 128 bytes, holding no NUL and not ending in a newline).
varint() { printf "\\x$(printf %02x $(($1 << 3)))\\x$(printf %02x "$2")"; }
field() {
  [ ${#2} -lt 128 ] || { echo "FAIL: field $1 is ${#2} bytes, the helper writes under 128" >&2; exit 1; }
  printf "\\x$(printf %02x $(($1 << 3 | 2)))\\x$(printf %02x ${#2})%s" "$2"
}
# onnx_model NODE_NAME OP_TYPE: a ModelProto (IR version 8, opset 14) whose graph's one node
# maps graph input x, float32 [1, 4], to graph output y: Relu gives logits [4].
onnx_model() {
  local shape node graph
  shape=$(field 2 "$(field 1 "$(varint 1 1)")$(field 1 "$(varint 1 4)")")
  node=$(field 1 x)$(field 2 y)$(field 3 "$1")$(field 4 "$2")
  graph=$(field 1 "$node")$(field 2 g)$(field 11 "$(field 1 x)$(field 2 "$(field 1 "$(varint 1 1)$shape")")")
  graph+=$(field 12 "$(field 1 y)")
  varint 1 8
  field 8 "$(varint 2 14)"
  field 7 "$graph"
}
# no_raw_byte LABEL: the latest refusal quotes bytes that are not UTF-8 escaped, never raw.
no_raw_byte() {
  checks=$((checks + 1))
  if grep -q $'[\xe9\xfa]' "$work/stderr"; then fail "$1: stderr holds a raw byte that is not UTF-8"; fi
}
onnx_model relu Relu > "$work/relu_ok.onnx"
ok "relu_ok" model show "$work/relu_ok.onnx"  # the same model with UTF-8 names imports
onnx_model $'Relu\xfa_0' Relu > "$work/node_name_0xfa.onnx"
onnx_model relu $'Re\xfalu' > "$work/op_type_0xfa.onnx"
for name in node_name_0xfa.onnx op_type_0xfa.onnx; do
  refused "$name" model show "$work/$name"
  contains_error "is not UTF-8: '"
  no_raw_byte "$name"
  refused "$name (import)" model import "$work/$name" -o "$work/x.json"
  no_raw_byte "$name (import)"
done
contains_error "the op type of ONNX node #0 is not UTF-8: 'Re\xfalu'"
refused "node_name_0xfa.onnx (show --json)" model show --json "$work/node_name_0xfa.onnx"
contains_error "the name of ONNX node #0 (Relu) is not UTF-8: 'Relu\xfa_0'"
refused "nonexistent path that is not UTF-8" model show "$work/caf"$'\xe9'".onnx"
no_raw_byte "nonexistent path that is not UTF-8"
# A good model in a file whose name is not UTF-8 imports, its name escaped.
cp "$work/relu_ok.onnx" "$work/caf"$'\xe9'".onnx"
ok "latin1_file_name" model import "$work/caf"$'\xe9'".onnx" -o "$work/latin1.json"

# --- zoo specs with bad options -------------------------------------------------------------
for spec in 'resnet50:foo=1' 'resnet50:classes=-3' 'resnet50:classes=0' 'resnet50:classes=' \
            'resnet50:classes=3x' 'resnet50:classes=99999999999999999999' 'resnet50:classes' \
            'resnet50:=1' 'resnet50:classes=1,classes=2' 'resnet50:image_size=0' \
            'resnet:depth=42' 'vgg16:image_size=16' 'inception_v3:aux_logits=maybe' \
            'vit_b_16:heads=7' 'vit_b_16:patch=15' 'gpt2:heads=7' 'gpt2:seq=2000' \
            'fmnist_cnn:channels=9223372036854775807' 'RESNET50' ':' ''; do
  refused "zoo spec '$spec'" model show "$spec"
done
refused "zoo spec 'resnet50:foo=1' (export)" model export 'resnet50:foo=1' -o "$work/x.json"

# --- bad command lines ----------------------------------------------------------------------
refused "no subcommand" 
refused "unknown subcommand" frobnicate
refused "unknown model subcommand" model frobnicate vgg16
refused "model without subcommand" model
refused "show without a model" model show
refused "export without a model" model export -o "$work/x.json"
refused "export without -o" model export vgg16
refused "export -o without a value" model export vgg16 -o
refused "unknown option" models --frobnicate
refused "unknown option of show" model show vgg16 --frobnicate
refused "extra argument" model show vgg16 resnet50
refused "unknown global option" --frobnicate

if [ -e "$work/x.json" ]; then
  failures=$((failures + 1))
  echo "FAIL: a refused export wrote $work/x.json"
fi

finish "malformed inputs refused with exit 2 and one line"
