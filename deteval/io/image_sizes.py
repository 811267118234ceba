"""Image sizes from the images' headers (no decoding): JPEG, PNG, BMP, GIF, WebP.

What ultralytics' loaders give as the original shape: a JPEG's EXIF orientation 5 to 8 (a quarter turn,
which OpenCV's ``imread`` applies) swaps width and height. A file whose header cannot be read is an
:class:`~deteval.errors.InputError` naming it.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence

from deteval.errors import InputError

__all__ = ["IMAGE_SUFFIXES", "folder_sizes", "image_size"]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def image_size(path: str) -> tuple[int, int]:
    """``(width, height)`` of an image file from its header."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
                return struct.unpack(">II", head[16:24])
            if head[:2] == b"BM" and len(head) >= 26:
                w, h = struct.unpack("<ii", head[18:26])
                return w, abs(h)
            if head[:6] in (b"GIF87a", b"GIF89a"):
                return struct.unpack("<HH", head[6:10])
            if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
                return _webp(head)
            if head[:2] == b"\xff\xd8":
                f.seek(2)
                return _jpeg(f)
    except (OSError, struct.error) as exc:
        raise InputError(path, None, f"cannot read the image's size: {getattr(exc, 'strerror', None) or exc}") from None
    raise InputError(path, None, "not a JPEG, PNG, BMP, GIF or WebP image (its size cannot be read)")


def _webp(head: bytes) -> tuple[int, int]:
    kind = head[12:16]
    if kind == b"VP8X":
        return 1 + int.from_bytes(head[24:27], "little"), 1 + int.from_bytes(head[27:30], "little")
    if kind == b"VP8L":
        bits = int.from_bytes(head[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if kind == b"VP8 ":
        w, h = struct.unpack("<HH", head[26:30])
        return w & 0x3FFF, h & 0x3FFF
    raise struct.error("unknown WebP chunk")


def _jpeg(f) -> tuple[int, int]:
    orientation = 1
    while True:
        marker = f.read(2)
        if len(marker) < 2 or marker[0] != 0xFF:
            raise struct.error("no frame header")
        while marker[1] == 0xFF:  # fill bytes
            marker = marker[1:] + f.read(1)
        code = marker[1]
        if code in (0xD8, 0x01) or 0xD0 <= code <= 0xD7:
            continue  # markers without a length
        (length,) = struct.unpack(">H", f.read(2))
        body = f.read(length - 2)
        if code == 0xE1 and body[:6] == b"Exif\x00\x00":
            orientation = _exif_orientation(body[6:]) or orientation
        elif code in _SOF:
            h, w = struct.unpack(">HH", body[1:5])
            return (h, w) if orientation in (5, 6, 7, 8) else (w, h)


def _exif_orientation(tiff: bytes) -> int | None:
    """The orientation tag (0x0112) of IFD0 in a TIFF block, or None."""
    end = {b"II": "<", b"MM": ">"}.get(tiff[:2])
    if end is None:
        return None
    (ifd,) = struct.unpack(end + "I", tiff[4:8])
    (n,) = struct.unpack(end + "H", tiff[ifd : ifd + 2])
    for k in range(n):
        entry = tiff[ifd + 2 + 12 * k : ifd + 14 + 12 * k]
        tag, kind = struct.unpack(end + "HH", entry[:4])
        if tag == 0x0112 and kind == 3:
            return struct.unpack(end + "H", entry[8:10])[0]
    return None


def folder_sizes(folder: str, stems: Sequence[str]) -> dict[str, list[int]]:
    """``{stem: [width, height]}`` of each stem's image in ``folder`` (``<stem>.jpg`` ...); one image per stem."""
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if os.path.splitext(e.name)[1].lower() in IMAGE_SUFFIXES]
    except OSError as exc:
        raise InputError(folder, None, f"cannot list the folder: {exc.strerror or exc}") from None
    by_stem: dict[str, str] = {}
    for name in sorted(names):
        stem = os.path.splitext(name)[0]
        if stem in by_stem:
            raise InputError(folder, stem, f"two images for one label file: {by_stem[stem]} and {name}")
        by_stem[stem] = name
    out = {}
    for stem in stems:
        if stem not in by_stem:
            rule = f"no image for this label file (looked for {', '.join(IMAGE_SUFFIXES)})"
            raise InputError(folder, stem, rule)
        out[stem] = list(image_size(os.path.join(folder, by_stem[stem])))
    return out
