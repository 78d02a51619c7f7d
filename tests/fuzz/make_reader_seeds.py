#!/usr/bin/env python3
"""Writes the seed corpora of the file-reader fuzz targets (standard library only):
tests/fuzz/safetensors_corpus/ and tests/fuzz/idx_corpus/. Each seed is a whole file as it would
be on disk: small valid files, and the hostile cases of issue 38 (deep nesting, numbers beyond
double range, huge dims with numel 0, truncated files, lying length prefixes) plus the other
refusals the readers document. The output is deterministic; rerun after changing a case and
commit the files. (libFuzzer's own findings are merged into these directories separately,
with -merge=1, and are not written here.)"""
import gzip
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def write(directory, name, data):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


# --- safetensors -------------------------------------------------------------------------------

def st_raw(header_text, data=b"", length=None):
    """8-byte little-endian length, the header padded with spaces to a multiple of 8, data."""
    h = header_text.encode() if isinstance(header_text, str) else header_text
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h) if length is None else length) + h + data


def st_file(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, bytes), laid out in that order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return st_raw(json.dumps(header, separators=(",", ":")), data)


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def safetensors_seeds():
    linear = [("bias", "F32", [3], f32(0.5, -1, 2)),
              ("weight", "F32", [3, 2], f32(1, 2, 3, 4, 5, 6))]
    every_dtype = [
        ("i64", "I64", [2], struct.pack("<2q", -1, 1 << 40)),
        ("f64", "F64", [], struct.pack("<d", 3.25)),
        ("f32", "F32", [2, 1], f32(1.5, float("inf"))),
        ("bf16", "BF16", [2], bytes([0x80, 0x3f, 0xc0, 0x7f])),
        ("f16", "F16", [1], bytes([0x00, 0x3c])),
        ("empty", "F32", [0, 3], b""),
        ("flags", "BOOL", [3], bytes([0, 1, 1])),
    ]
    seeds = {
        # Valid files.
        "valid_linear": st_file(linear, {"epoch": "3"}),
        "valid_linear_with_extra": st_file(
            linear + [("step", "I64", [], struct.pack("<q", 7))],
            {"aclgrad.extra_tensors": '["step"]'}),
        "valid_every_dtype": st_file(every_dtype, {"note": "\u00e9t\u00e9"}),
        "valid_metadata_only": st_file([], {"k": "v"}),
        "valid_empty_object": st_raw("{}"),
        # Empty tensors whose other dims multiply past int64 (numel 0): they load.
        "huge_dims_numel_0": st_file([("e", "F32", [0, 4294967296, 4294967296], b"")]),
        "huge_dims_numel_0_last": st_file([("e", "I64", [9223372036854775807, 0], b"")]),
        # Nesting past the 128-level bound, in a shape, in metadata, in nn::load's extra list.
        "deep_nesting_shape": st_raw('{"a":{"dtype":"F32","shape":' + "[" * 200 + "]" * 200 +
                                     ',"data_offsets":[0,0]}}'),
        "deep_nesting_metadata": st_raw('{"__metadata__":{"k":' + "{" * 150 + "}" * 150 + "}}"),
        "deep_nesting_unclosed": st_raw("{" + '"a":[' * 300),
        "deep_extra_tensor_list": st_file(linear, {"aclgrad.extra_tensors": "[" * 200 + "]" * 200}),
        # Numbers beyond double range.
        "number_1e400_shape": st_raw('{"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}}',
                                     f32(1)),
        "number_minus_1e400_offset": st_raw(
            '{"a":{"dtype":"F32","shape":[1],"data_offsets":[-1e400,4]}}', f32(1)),
        "number_1e400_metadata": st_raw('{"__metadata__":{"k":1e400}}'),
        "number_float_shape": st_raw('{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}',
                                     f32(1)),
        "number_negative_shape": st_raw('{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}',
                                        f32(1)),
        "shape_overflows_int64": st_raw(
            '{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}', f32(1)),
        # Truncated files.
        "truncated_in_data": st_file(linear)[:-5],
        "truncated_in_header": st_file(linear)[:20],
        "truncated_in_length": b"\x10\x00\x00",
        "empty_file": b"",
        # Lying length prefixes.
        "length_beyond_file": st_raw('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
                                     f32(1), length=4096),
        "length_past_limit": st_raw("{}", length=1 << 62),
        "length_zero": st_raw('{"a":{}}', length=0),
        "length_short_of_header": st_raw('{"__metadata__":{"k":"v"}}', length=9),
        # Data sections that do not tile.
        "offsets_overlap": st_raw('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                                  '"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', f32(1)),
        "offsets_gap": st_raw('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
                              f32(1, 2)),
        "offsets_past_data": st_raw('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
                                    f32(1)),
        "trailing_bytes": st_file(linear) + b"xx",
        "offsets_reversed": st_raw('{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}',
                                   f32(1)),
        "bytes_do_not_match_shape": st_raw(
            '{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,4]}}', f32(1)),
        # Everything else the reader refuses.
        "duplicate_name": st_raw('{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},'
                                 '"a":{"dtype":"F32","shape":[],"data_offsets":[4,8]}}',
                                 f32(1, 2)),
        "bool_byte_2": st_file([("b", "BOOL", [2], bytes([1, 2]))]),
        "dtype_unsupported": st_file([("u", "U8", [2], b"\x01\x02")]),
        "dtype_unknown": st_file([("u", "Q7", [2], b"\x01\x02")]),
        "dtype_not_string": st_raw('{"a":{"dtype":7,"shape":[],"data_offsets":[0,0]}}'),
        "field_missing": st_raw('{"a":{"dtype":"F32","shape":[]}}'),
        "field_unexpected": st_raw(
            '{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],"x":1}}', f32(1)),
        "metadata_not_string": st_raw('{"__metadata__":{"k":[1,2]}}'),
        "metadata_not_object": st_raw('{"__metadata__":"v"}'),
        "header_not_object": st_raw("[1,2]"),
        "header_not_json": st_raw('{"a":'),
        "header_invalid_utf8": st_raw(b'{"\xff\xfe":{"dtype":"F32","shape":[],'
                                      b'"data_offsets":[0,4]}}', f32(1)),
        "extra_tensor_list_not_array": st_file(linear, {"aclgrad.extra_tensors": '{"a":1}'}),
        "extra_tensor_missing": st_file(linear, {"aclgrad.extra_tensors": '["nope"]'}),
        "module_shape_mismatch": st_file([("weight", "F32", [2, 3], f32(1, 2, 3, 4, 5, 6))]),
        "module_dtype_mismatch": st_file([("bias", "F64", [3], struct.pack("<3d", 1, 2, 3))]),
    }
    for name, data in seeds.items():
        write(os.path.join(HERE, "safetensors_corpus"), name, data)
    return len(seeds)


# --- IDX ---------------------------------------------------------------------------------------

def idx_file(sizes, data=None, type_code=0x08, ndim=None):
    """Big-endian magic 0x0000 <type> <ndim>, the sizes, then data (default: 0, 1, 2, ...)."""
    count = 1
    for s in sizes:
        count *= s
    if data is None:
        data = bytes(i % 256 for i in range(count))
    head = bytes([0, 0, type_code, len(sizes) if ndim is None else ndim])
    return head + b"".join(struct.pack(">I", s) for s in sizes) + data


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def idx_seeds():
    images = idx_file([2, 3, 4])
    labels = idx_file([5], bytes([9, 0, 3, 2, 7]))
    lying = idx_file([1 << 20, 1 << 10, 1 << 10], b"\x01\x02\x03")  # 2^40 claimed, 3 bytes given
    corrupt = bytearray(gz(images))
    corrupt[-6] ^= 0xFF  # the CRC-32 in the gzip trailer
    seeds = {
        # Valid files, plain and gzip.
        "valid_images": images,
        "valid_images.gz": gz(images),
        "valid_labels": labels,
        "valid_labels.gz": gz(labels),
        "valid_2d": idx_file([2, 3]),
        "valid_255_dims": idx_file([1] * 255),
        # Empty with huge other dims (numel 0): read as empty tensors.
        "huge_dims_numel_0": idx_file([0, 4294967295, 4294967295], b""),
        "huge_dims_numel_0.gz": gz(idx_file([0, 4294967295, 4294967295], b"")),
        # Truncated files.
        "truncated_data": images[:-3],
        "truncated_data.gz": gz(images[:-3]),
        "truncated_header": images[:10],
        "truncated_magic": b"\x00\x00",
        "empty_file": b"",
        "truncated_gzip_stream": gz(images)[:-12],
        "corrupt_gzip_crc": bytes(corrupt),
        # Lying sizes: more data claimed than given, and more than 2^40 elements.
        "lying_sizes": lying,
        "lying_sizes.gz": gz(lying),
        "sizes_past_2_40": idx_file([1 << 31, 1 << 10], b""),
        "sizes_past_2_40_late": idx_file([2, 1, 1 << 31, 4294967295, 0], b""),
        "trailing_bytes": images + b"\x00",
        "trailing_bytes.gz": gz(images + b"\x00"),
        # Bad magic numbers.
        "type_float": idx_file([2], b"\x00" * 8, type_code=0x0D),
        "type_unknown": idx_file([2], b"\x00\x00", type_code=0x42),
        "magic_not_zero": b"\x01" + images[1:],
        "zero_dims": bytes([0, 0, 8, 0]),
        "ndim_more_than_sizes": idx_file([2, 2], bytes(4), ndim=4),
    }
    for name, data in seeds.items():
        write(os.path.join(HERE, "idx_corpus"), name, data)
    return len(seeds)


if __name__ == "__main__":
    n = safetensors_seeds()
    m = idx_seeds()
    print(f"wrote {n} safetensors seeds and {m} IDX seeds", file=sys.stderr)
