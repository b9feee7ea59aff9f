#!/usr/bin/python3
"""test-plot-png.py - bench/plot.py's SVG viewed as a picture (#18): draw
the plot of a committed results file, render it to PNG with Debian's
rsvg-convert (librsvg2-bin), and check the picture is not empty: it has
the size asked, and besides the white background it has many drawn pixels
in several colours (axes, text, the measured and reference series)."""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


if not shutil.which("rsvg-convert"):
    skip("rsvg-convert not installed (apt-get install librsvg2-bin)")
try:
    from PIL import Image
    import matplotlib  # noqa: F401  (plot.py needs it)
except ImportError as e:
    skip("%s (apt-get install python3-matplotlib python3-pil)" % e)

tmp = tempfile.mkdtemp()
try:
    md = os.path.join(tmp, "pipeline-cpu.md")
    shutil.copy(os.path.join(SRC, "bench", "results", "pipeline-cpu.md"), md)
    subprocess.run([os.path.join(SRC, "bench", "plot.py"), md], check=True,
                   stdout=subprocess.DEVNULL)
    svg = os.path.join(tmp, "pipeline-cpu.svg")
    png = os.path.join(tmp, "pipeline-cpu.png")
    subprocess.run(["rsvg-convert", "-w", "800", "-b", "white", svg, "-o", png], check=True)
    img = Image.open(png).convert("RGB")
    w, h = img.size
    px = list(img.getdata())
    drawn = sum(1 for p in px if p != (255, 255, 255)) / len(px)
    colours = len(set(px))
    # coloured (not grey) pixels: the series and the target bars
    coloured = sum(1 for r, g, b in px if max(r, g, b) - min(r, g, b) > 60)
    print("PNG %dx%d: %.1f%% drawn, %d colours, %d coloured pixels" %
          (w, h, 100 * drawn, colours, coloured))
    fails = []
    if w != 800 or h < 200:
        fails.append("size %dx%d" % (w, h))
    if drawn < 0.02:
        fails.append("only %.2f%% of the pixels drawn" % (100 * drawn))
    if colours < 16 or coloured < 500:
        fails.append("%d colours, %d coloured pixels: no series drawn" % (colours, coloured))
    if fails:
        print("FAIL - " + "; ".join(fails))
        sys.exit(1)
    print("ok   - bench/plot.py's SVG renders to a non-empty PNG")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
