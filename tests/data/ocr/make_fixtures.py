#!/usr/bin/python3
"""Regenerates the decode edge-case fixtures of tests/pipeline and tests/cli (small, deterministic).

Usage: tests/data/ocr/make_fixtures.py            (writes next to this script)
Needs python3-pil, python3-numpy, python3-opencv, fonts-dejavu-core.
The synthetic documents (doc_*.jpg, labels.txt) come from ../shared/tools/synth_docs.py instead; see README.md.
"""
import io, os, struct, zlib
import numpy as np
import cv2
from PIL import Image, ImageDraw, ImageFont

HERE = os.path.dirname(os.path.abspath(__file__))
DEC = os.path.join(HERE, "decode")
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LINE = "receipt2026"  # one word, read the same on every background (a capital I reads as l)


def line_mask(text=LINE, size=30, pad=20):
    font = ImageFont.truetype(FONT, size)
    l, t, r, b = ImageDraw.Draw(Image.new("L", (1, 1))).textbbox((0, 0), text, font=font)
    im = Image.new("L", (r - l + 2 * pad, b - t + 2 * pad), 0)
    ImageDraw.Draw(im).text((pad - l, pad - t), text, font=font, fill=255)
    return np.asarray(im)  # 255 = ink (anti-aliased)


def save(name, data):
    with open(os.path.join(DEC, name), "wb") as f:
        f.write(data)


def png_bytes(img, **kw):
    buf = io.BytesIO(); img.save(buf, "PNG", **kw); return buf.getvalue()


def main():
    os.makedirs(DEC, exist_ok=True)
    ink = line_mask()
    h, w = ink.shape
    dark = (255 - ink).astype(np.uint8)  # dark text on white, grayscale

    # Text line in every format: dark on white.
    Image.fromarray(dark).convert("RGB").save(os.path.join(DEC, "line.bmp"))
    Image.fromarray(dark).convert("RGB").save(os.path.join(DEC, "line.webp"), lossless=True)
    Image.fromarray(dark).convert("RGB").save(os.path.join(DEC, "line.tif"), compression="tiff_deflate")
    Image.fromarray(dark).save(os.path.join(DEC, "line_gray.png"))
    Image.fromarray(dark).quantize(colors=16).save(os.path.join(DEC, "line_palette.png"))
    cv2.imwrite(os.path.join(DEC, "line_gray16.png"), dark.astype(np.uint16) * 257)
    Image.fromarray(dark).convert("RGB").save(os.path.join(DEC, "line.jpg"), quality=90)

    # Transparency: dark text on transparent black, white text on transparent white. Dropping alpha leaves
    # black-on-black / white-on-white, so only a contrast-aware flattening keeps them readable.
    rgba = np.zeros((h, w, 4), np.uint8); rgba[..., 3] = ink  # colour 0 everywhere
    Image.fromarray(rgba, "RGBA").save(os.path.join(DEC, "rgba_dark_text.png"))
    rgba = np.full((h, w, 4), 255, np.uint8); rgba[..., 3] = ink
    Image.fromarray(rgba, "RGBA").save(os.path.join(DEC, "rgba_white_text.png"))

    # EXIF orientation 6 (rotate 90 degrees clockwise to display): the text is stored rotated the other way.
    stored = Image.fromarray(dark).convert("RGB").transpose(Image.Transpose.ROTATE_90)  # counter-clockwise
    exif = Image.Exif(); exif[274] = 6
    stored.save(os.path.join(DEC, "line_exif6.jpg"), quality=90, exif=exif.tobytes())
    # Orientation probe: stored 80x40, left half black / right half white; displayed 40x80, black on top.
    probe = np.full((40, 80, 3), 255, np.uint8); probe[:, :40] = 0
    Image.fromarray(probe).save(os.path.join(DEC, "probe_exif6.jpg"), quality=95, exif=exif.tobytes())
    # Same probe as PNG with an eXIf chunk and as TIFF with an Orientation tag.
    Image.fromarray(probe).save(os.path.join(DEC, "probe_exif6.png"), exif=exif.tobytes())
    Image.fromarray(probe).save(os.path.join(DEC, "probe_exif6.tif"), exif=exif.tobytes())

    # Damaged and hostile files.
    jpg = open(os.path.join(DEC, "line.jpg"), "rb").read()
    png = open(os.path.join(DEC, "line_gray.png"), "rb").read()
    save("truncated.jpg", jpg[: len(jpg) // 2])
    save("truncated.png", png[: len(png) // 2])
    save("empty.jpg", b"")
    save("not_an_image.png", b"this is a text file, not a picture\n")
    # A valid PNG header declaring 100000 x 100000 pixels, followed by a tiny IDAT and IEND.
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 0, 0, 0, 0)
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    save("huge_dims.png", b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) +
         chunk(b"IEND", b""))
    # A JPEG whose frame header (SOF0) declares 60000 x 60000; the rest is the small image's data.
    sof = jpg.find(b"\xff\xc0")
    save("huge_dims.jpg", jpg[: sof + 5] + struct.pack(">HH", 60000, 60000) + jpg[sof + 9:])
    Image.fromarray(dark).save(os.path.join(DEC, "line.gif"))
    print("fixtures written to", DEC)


if __name__ == "__main__":
    main()
