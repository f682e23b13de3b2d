"""MyST Markdown to the plain Markdown Jupyter and Colab render (docs/authoring.md, "Downloads").
A dropdown becomes ``<details>``: JupyterLab's sanitizer keeps it (``allowedTags`` in
https://github.com/jupyterlab/jupyterlab/blob/main/packages/apputils/src/sanitizer.ts)."""

from __future__ import annotations

import base64
import html
import itertools
import re
import textwrap
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

import jinja2
import mdformat_footnote
from docutils.parsers.rst.directives.misc import TestDirective
from mdformat.renderer import DEFAULT_RENDERERS, MDRenderer, RenderContext, RenderTreeNode
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.directives import parse_directive_text
from myst_parser.parsers.mdit import create_md_parser
from sphinx.locale import admonitionlabels
from sphinx.util.nodes import split_explicit_title
from sphinx.util.tags import Tags

from coursebook.model.solutions import builder_tags
from coursebook.worddiff import code_span


@dataclass(frozen=True)
class Target:  # where a cross-reference points ("" url: not published)
    title: str
    url: str = ""


# Admonitions and the title each shows when the directive gives none: Sphinx's, and ours
# for a version note (Sphinx's needs the version).
ADMONITION_TITLES = {
    "admonition": "Note", **{name: str(title) for name, title in admonitionlabels.items()},
    "versionadded": "New", "versionchanged": "Changed", "deprecated": "Deprecated",
}
# Directives that only lay out their content: the content stays, the layout goes.
_LAYOUT = {"grid", "grid-item", "div", "container", "tab-set", "tab-item", "card-carousel",
           "topic", "sidebar", "epigraph", "highlights", "pull-quote", "rubric"}
_TITLED = {"tab-item", "topic", "sidebar", "rubric"}  # their argument is text the page shows
_CARDS = {"card", "grid-item-card"}
_CODE = {"code-block", "code", "sourcecode", "code-cell"}
_REFERENCE_ROLES = {"ref", "numref", "doc", "any", "eq", "term", "download"}
_TEXT_ROLES = {"sub", "sup", "abbr", "title-reference", "emphasis", "strong"}
# What a glued value shows, the first of these it has (myst-nb's order for HTML).
_GLUED = ("text/html", "image/svg+xml", "image/png", "image/gif", "image/jpeg", "text/markdown",
          "text/latex", "text/plain")
_ALIGNED = {"": " --- |", "left": " :-- |", "right": " --: |", "center": " :-: |"}  # a table's
# mdformat's renderers of a node's children: a paragraph's (inline), and a document's
# (blocks, a blank line between, none for an empty one: a target's, a comment's).
_INLINE = DEFAULT_RENDERERS["inline"]
_BLOCKS = DEFAULT_RENDERERS["root"]


@dataclass
class PlainMarkdown:
    resolve: Callable[[str, str], Target | None]  # (role, target); None: the book has none
    page_url: str = ""  # the chapter's published page ("" if the book has no address)
    md_config: MdParserConfig | None = None
    # Whether an `{only}` directive's condition holds: a download is read like the HTML.
    only: Callable[[str], bool] = field(default=Tags(builder_tags("html")).eval_condition)
    # Where an image a figure or image directive names is published ("" if nowhere).
    image_url: Callable[[str], str] = lambda path: path if "://" in path else ""
    # The .md download, plain text, collapses nothing: each dropdown's (summary, content) goes
    # here, printed after the text, so that an error to predict is not read ahead.
    set_aside: list[tuple[str, str]] | None = None
    _aside: bool = False  # converting a block set aside: one inside it is read in place
    # There too, a glued image's data: address (thousands of characters) is printed last.
    images: list[str] | None = None
    # The page's numbered blocks' numbers by kind (exercise, theorem...) in order: Sphinx's,
    # counted on across the book's pages (downloads.block_numbers); alone, from 1.
    numbers: dict[str, Iterator[object]] = field(
        default_factory=lambda: defaultdict(lambda: itertools.count(1)))
    # What the page's cells glue (myst-nb's glue), by key: each value's mime bundle.
    glued: dict[str, dict] = field(default_factory=dict)

    def kept_for_the_end(self, summary: str, content: str) -> str:  # what stands in its place
        self.set_aside.append((summary, content))
        return f"*{escape(summary)}: note {len(self.set_aside)}, at the end of this file.*"

    @cached_property
    def _parser(self):
        parser = create_md_parser(self.md_config or MdParserConfig(), MDRenderer)
        parser.options.update(mdformat={"number": True, "wrap": "keep"}, codeformatters={},
                              parser_extension=[mdformat_footnote, _MystToPlain], store_labels=True)
        return parser

    def convert(self, source: str) -> str:
        # The renderers below find the converter in markdown-it's env, under its class.
        return self._parser.render(source, {PlainMarkdown: self}).rstrip("\n")

    def role(self, role: str, content: str) -> str:
        if role.partition(":")[0] == "glue":
            return self.paste(role.partition(":")[2], content)
        name = role.split(":")[-1]  # py:func and the like: the role's own name
        if name == "math":
            return f"${content}$"
        if name in _REFERENCE_ROLES:
            explicit, text, target = split_explicit_title(content)  # "title <target>"
            # The full name tells prf:ref from ref; std is Sphinx's default domain ({std:doc}).
            found = self.resolve(role.removeprefix("std:"), target.strip()) or Target(target)
            return self.link(text if explicit else found.title, found.url)
        if name in _TEXT_ROLES:
            return escape(content)
        return code_span(content)

    def link(self, text: str, url: str) -> str:
        return f"[{escape(text)}]({url})" if url else escape(text)

    def image(self, path: str, alt: str, caption: str = "") -> str:
        alt = _alt_text(alt, caption, "A figure")
        if url := self.image_url(path):
            return f"![{alt}]({url})" + (f"\n\n*{caption}*" if caption else "")
        return f"*{self.link('Figure', self.page_url)}:* {caption or alt}"

    def paste(self, kind: str, text: str, caption: str = "", inline: bool = True,
              alt: str = "") -> str:
        """A glue role's or directive's value as the page shows it, from the build's run (an
        image inline: the download keeps no output)."""
        from myst_nb.core.render import strip_latex_delimiters
        from myst_nb.core.variables import format_plain_text

        key, spec = text.rsplit(":", 1) if kind in ("text", "md") and ":" in text else (text, "s")
        data = self.glued.get(key.strip(), {})
        mimes = {"text": ["text/plain"], "md": ["text/markdown"], "math": ["text/latex"]}
        mime = next((mime for mime in mimes.get(kind, _GLUED) if mime in data), None)
        if mime is None:  # another page's (``page::key``), or none: myst-nb warned
            return self.on_page()
        value = data[mime]
        if kind == "text":
            try:
                return escape(format_plain_text(value, spec))
            except ValueError:  # a format the value has not: myst-nb warned, pastes nothing
                return self.on_page()
        if mime == "text/plain":
            shown = escape(value) if inline else fenced(value)
        elif mime == "text/latex":
            math = strip_latex_delimiters(value).strip()
            shown = f"${math}$" if inline else f"$$\n{math}\n$$"
        elif mime == "text/markdown":
            shown = self.convert(value)
        elif mime.startswith("image/"):
            image = "".join(value.split()) if mime != "image/svg+xml" else base64.b64encode(
                value.encode()).decode()
            address = f"data:{mime};base64,{image}"
            if self.images is not None:
                self.images.append(address)
            target = f"[glued-{len(self.images)}]" if self.images is not None else f"({address})"
            shown = f"![{_alt_text(alt, caption, key)}]{target}"
        else:  # HTML, as Jupyter shows it
            shown = value
        return shown + (f"\n\n*{caption}*" if caption else "")

    def on_page(self) -> str:  # in place of what only the book's page shows
        return "*" + self.link("Shown on the book's page", self.page_url) + ".*"

    def directive(self, info: str, body: str) -> str:
        name, _, argument = info.strip()[1:].partition("}")
        argument = argument.strip()
        options, content = split_options(body)
        if name.partition(":")[0] == "glue":
            caption = self.convert(content) if name == "glue:figure" else ""
            return self.paste(name.partition(":")[2], argument, caption, False,
                              options.get("alt", ""))
        if name in ADMONITION_TITLES:
            if name != "admonition" and argument:
                content = f"{argument}\n{content}"  # an admonition's first line is its text
            title = argument if name == "admonition" and argument else ADMONITION_TITLES[name]
            quoted = f"**{escape(title)}**\n\n{self.convert(content)}".strip()
            return "\n".join(f"> {line}" if line else ">" for line in quoted.splitlines())
        if name == "only":
            return self.convert(content) if self.only(argument) else ""
        if name == "dropdown" and self.set_aside is not None:
            if self._aside:  # an error note in an exhibit's reveal: read after it
                return f"*{escape(argument or 'Note')}:*\n\n{self.convert(content)}"
            self._aside = True
            text, self._aside = self.convert(content), False
            return self.kept_for_the_end(argument or "Note", text)
        if name == "dropdown":  # blank lines around the content: Markdown inside HTML
            opening = "<details open>" if "open" in options else "<details>"
            summary = f"<summary>{html.escape(argument)}</summary>\n\n" if argument else ""
            return f"{opening}\n{summary}{self.convert(content)}\n\n</details>"
        if name == "prf:proof":  # as sphinx-proof writes it
            return f"*Proof.* {self.convert(content)}".rstrip()
        if name in ("exercise", "exercise-start") or name.startswith("prf:"):  # a theorem...
            kind = name.removeprefix("prf:").removesuffix("-start")  # numbered as on the page
            number = None if "nonumber" in options else next(self.numbers[kind], None)
            title = kind.title() if number is None else f"{kind.title()} {number}"
            title += f" ({escape(argument)})" if argument else ""
            return f"**{title}**\n\n{self.convert(content)}".rstrip()
        if name in ("solution", "solution-start"):  # an instructor's
            return f"**Solution**\n\n{self.convert(content)}".rstrip()
        if name in ("exercise-end", "solution-end", "index", "raw"):  # nothing on the page,
            return content if argument == "html" else ""  # but raw HTML, as Jupyter shows it
        if name in _LAYOUT:  # a tab's label stays (a grid's column count, a div's class: not)
            title = f"**{escape(argument)}**\n\n" if argument and name in _TITLED else ""
            return f"{title}{self.convert(content)}".strip()
        if name == "glossary":  # each term flush left, its definition indented below it
            terms = re.split(r"^(?=\S)", content.strip("\n"), flags=re.M)
            return "\n\n".join(f"**{escape(term.splitlines()[0])}**\n\n"
                                 f"{self.convert(textwrap.dedent(term.partition(chr(10))[2]))}"
                                 for term in terms if term.strip())
        if name in _CARDS:
            title = argument or options.get("header", "")
            link, kind = options.get("link", ""), options.get("link-type", "url")
            found = (self.resolve(kind, link) if link and kind in ("ref", "doc")
                     else Target(title, link)) or Target(link)
            title = self.link(title or found.title, found.url)  # no link: the title
            inner = self.convert(content)
            return f"**{title}**" + (f" · {inner}" if inner and "\n" not in inner else
                                      f"\n\n{inner}" if inner else "")
        if name in _CODE:
            return fenced(content, argument.split()[0] if argument else "")
        if name == "math":
            return f"$$\n{content.strip()}\n$$"
        if name in ("figure", "image"):
            caption = self.convert(content) if name == "figure" else ""
            return self.image(argument.strip(), options.get("alt", ""), caption)
        return self.on_page()


def _alt_text(alt: str, caption: str, fallback: str) -> str:  # the caption is Markdown already
    return escape(alt) if alt else caption.split("\n")[0] or escape(fallback)


# --- mdformat renderers (one per MyST syntax node) ----------------------------------

def _role(node: RenderTreeNode, context: RenderContext) -> str:
    return context.env[PlainMarkdown].role(node.meta.get("name", ""), node.content)


def _fence(node: RenderTreeNode, context: RenderContext) -> str:
    if node.info.strip().startswith("{"):
        return context.env[PlainMarkdown].directive(node.info, node.content)
    if node.type == "colon_fence":
        return context.env[PlainMarkdown].convert(node.content)
    return DEFAULT_RENDERERS["fence"](node, context)


def _image(node: RenderTreeNode, context: RenderContext) -> str:  # as a figure directive's
    alt = "".join(child.content for child in node.walk(include_self=False)  # *emphasis* too
                  if child.type in ("text", "code_inline"))
    return context.env[PlainMarkdown].image(node.attrs["src"], alt)


def _math_block(node: RenderTreeNode, context: RenderContext) -> str:
    return f"$$\n{node.content.strip()}\n$$"


def _bold(node: RenderTreeNode, context: RenderContext) -> str:  # a term, field or alert title
    return f"**{_INLINE(node, context)}**"


def _table(node: RenderTreeNode, context: RenderContext) -> str:  # GitHub's, as Jupyter's
    rows = []
    for section in node.children:
        for row in section.children:
            cells = [cell.children[0].render(context) if cell.children else ""
                     for cell in row.children]
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
            if section.type == "thead":  # each column's alignment, as written
                styles = [str(cell.attrs.get("style", "")) for cell in row.children]
                rows.append("|" + "".join(_ALIGNED[style[len("text-align:"):]] for style in styles))
    return "\n".join(rows)


def _list_item(node: RenderTreeNode, context: RenderContext) -> str:  # a task's box as written
    box = {True: "[x] ", False: "[ ] "}.get(node.meta.get("checked"), "")
    return box + DEFAULT_RENDERERS["list_item"](node, context)


def _link(node: RenderTreeNode, context: RenderContext) -> str:  # [](#label), [](label), [](x.md)
    href, converter = str(node.attrs["href"]), context.env[PlainMarkdown]
    role = ("doc" if href.endswith(".md") and "://" not in href else
            "ref" if not re.match(r"[a-z][\w+.-]*:", href) else "")
    if not role or (found := converter.resolve(role, href.removeprefix("#"))) is None:
        return DEFAULT_RENDERERS["link"](node, context)  # a web address, or a heading's anchor
    text = _INLINE(node, context)  # Markdown already: the title is text
    if text:
        return f"[{text}]({found.url})" if found.url else text
    return converter.link(found.title, found.url)


def _substitution(node: RenderTreeNode, context: RenderContext) -> str:  # as myst-parser's
    converter, expression = context.env[PlainMarkdown], f"{{{{{node.content}}}}}"
    try:
        value = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(
            expression).render(converter.md_config.substitutions)
    except Exception:  # noqa: BLE001 - myst-parser warns at its line; the text stays
        return escape(expression)
    return converter.convert(value)


class _MystToPlain:  # a parser extension as mdformat's renderer reads it (no POSTPROCESSORS)
    RENDERERS = {
        "myst_role": _role,
        **dict.fromkeys(["myst_target", "myst_line_comment", "myst_block_break", "front_matter"],
                        lambda node, context: ""),
        "fence": _fence,
        "image": _image,
        "link": _link,
        "colon_fence": _fence,
        "math_inline": lambda node, context: f"${node.content}$",
        "math_inline_double": lambda node, context: f"$${node.content}$$",
        "math_block": _math_block,
        "math_block_label": _math_block,
        "amsmath": _math_block,
        "dl": _BLOCKS,
        "dt": _bold,
        "dd": _BLOCKS,
        "field_list": _BLOCKS,
        "fieldlist_name": _bold,
        "fieldlist_body": _BLOCKS,
        "alert": DEFAULT_RENDERERS["blockquote"],
        "alert_title": _bold,
        "table": _table,
        "list_item": _list_item,
        "s": lambda node, context: f"~~{_INLINE(node, context)}~~",
        "span": _INLINE,  # its attributes style the HTML only
        "substitution_inline": _substitution,
        "substitution_block": _substitution,
        # myst-parser keeps a footnote's definition where it is written, under this name.
        "footnote_reference": mdformat_footnote.RENDERERS["footnote"],
    }


def escape(text: str) -> str:
    return re.sub(r"([\\`*_\[\]<>$|])", r"\\\1", text)


def fenced(code: str, language: str = "") -> str:  # no backticks in ``code`` close it
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`{3,}", code))])
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def split_options(body: str) -> tuple[dict[str, str], str]:
    """A directive's options and content as MyST reads them, any option a string (myst-parser's
    undocumented case for docutils' TestDirective, pinned by tests/test_downloads.py)."""
    parsed = parse_directive_text(TestDirective, "", body)
    return parsed.options, "\n".join(parsed.body)
