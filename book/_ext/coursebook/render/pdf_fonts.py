"""The PDF's fonts, and the fonts a character they lack falls back on.

lualatex's font loader, luaotfload, takes a list of fallback fonts: a character the
font lacks is looked up in them, in order (luaotfload's manual, "Fallback",
``luaotfload.add_fallback`` and the ``fallback`` font feature:
https://ctan.org/pkg/luaotfload). The book's text and code fonts share one list, so
CJK, emoji and mathematical symbols print in prose and in outputs alike. Every font
here comes from a Debian package of tools/pdf-packages.txt (`make pdf-deps`).
"""

from __future__ import annotations

from dataclasses import dataclass

ENGINE = "lualatex"  # conf.py's latex_engine
FALLBACK = "coursebook"  # the fallback list's name in luaotfload


@dataclass(frozen=True)
class Font:
    family: str
    package: str  # the Debian package that installs it


SERIF = Font("FreeSerif", "fonts-freefont-otf")
SANS = Font("FreeSans", "fonts-freefont-otf")
# DejaVu Sans Mono has every glyph of tracebacks, arrows and Greek.
MONO = Font("DejaVu Sans Mono", "fonts-dejavu-core")
# DejaVu Sans first (symbols the Free fonts and the monospaced DejaVu lack), then the
# Han ideographs, kana and hangul, then the emoji (monochrome).
FALLBACK_FONTS = (Font("DejaVu Sans", "fonts-dejavu-core"),
                  Font("Noto Sans CJK SC", "fonts-noto-cjk"),
                  Font("Symbola", "fonts-symbola"))
FONTS = (SERIF, SANS, MONO, *FALLBACK_FONTS)


def fontpkg() -> str:
    """LaTeX for conf.py's ``latex_elements["fontpkg"]``: the fonts, each with the fallbacks.

    The fallback fonts load through HarfBuzz (``mode=harf``): a machine that has not
    cached the 65,000-glyph CJK font yet typesets its first PDF about 5 s sooner than in
    luaotfload's node mode (measured: 9 s against 14 s), and later ones as fast.
    """
    fallbacks = ", ".join(f'"{font.family}:mode=harf;"' for font in FALLBACK_FONTS)
    feature = f"RawFeature={{fallback={FALLBACK}}}"
    return rf"""
\directlua{{luaotfload.add_fallback("{FALLBACK}", {{{fallbacks}}})}}
\setmainfont{{{SERIF.family}}}[{feature}]
\setsansfont{{{SANS.family}}}[{feature}]
\setmonofont{{{MONO.family}}}[Scale=0.84, {feature}]
"""


def families(fc_list_output: str) -> set[str]:
    """The font families ``fc-list : family`` printed (a font may have several names)."""
    return {name.strip() for line in fc_list_output.splitlines() for name in line.split(",")}


def missing_fonts(installed: set[str]) -> list[Font]:
    """The book's fonts that are not installed."""
    return [font for font in FONTS if font.family not in installed]
