"""The PDF's fonts and the fallbacks luaotfload tries in order for a character they lack
(https://ctan.org/pkg/luaotfload, "Fallback"); each a Debian package (`make pdf-deps`)."""

from __future__ import annotations

from typing import NamedTuple

ENGINE = "lualatex"  # conf.py's latex_engine
FALLBACK = "coursebook"  # the fallback list's name in luaotfload


class Font(NamedTuple):
    family: str
    package: str  # Debian's


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
    """conf.py's ``latex_elements["fontpkg"]``. The fallbacks load through HarfBuzz: an
    uncached CJK font typesets in 9 s, not node mode's 14 s (measured)."""
    fallbacks = ", ".join(f'"{font.family}:mode=harf;"' for font in FALLBACK_FONTS)
    feature = f"RawFeature={{fallback={FALLBACK}}}"
    return rf"""
\directlua{{luaotfload.add_fallback("{FALLBACK}", {{{fallbacks}}})}}
\setmainfont{{{SERIF.family}}}[{feature}]
\setsansfont{{{SANS.family}}}[{feature}]
\setmonofont{{{MONO.family}}}[Scale=0.84, {feature}]
"""


def name_only_the_latex_folder(app) -> None:
    """``builder-inited``: the build's last words say where its files are, not Sphinx's
    advice to run a `make latexpdf` the book lacks (`make pdf` runs this build, then typesets)."""
    if app.builder.name == "latex":
        app.builder.epilog = "The LaTeX files are in %(outdir)s."
