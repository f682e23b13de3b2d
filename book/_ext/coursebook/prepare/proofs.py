"""Theorems, definitions and proofs with sphinx-proof, as the courses brought in write them: a
proof is content unless the chapter marks it an answer (docs/authoring.md)."""

from __future__ import annotations

from sphinx.application import Sphinx
from sphinx_proof.domain import ProofDomain

from coursebook.reporting import report


class _ProofDomain(ProofDomain):
    def merge_domaindata(self, docnames, otherdata) -> None:
        """None to merge: its labels are ``env.proof_list`` (merged by sphinx-proof's own
        env-merge-info hook), but without this a parallel read (`-j`) stops."""

    def resolve_xref(self, env, fromdocname, builder, typ, target, node, contnode):
        # sphinx-proof's own warning names no line, and the page as `.rst`; each place told.
        if node.get("refdomain") == self.name and target not in proof_blocks(env):
            report(f"{{prf:ref}}`{target}`: nothing in this edition is labelled `{target}` (a "
                   "typo, another lecture's label, or one in an answer, which the student edition "
                   "lacks): label the block it means, outside the answers, or write it as text",
                   node, "proof")
            return None
        return super().resolve_xref(env, fromdocname, builder, typ, target, node, contnode)


def proof_blocks(env) -> dict:  # sphinx-proof's labelled blocks (no API gives them)
    return getattr(env, "proof_list", {})


def setup_proofs(app: Sphinx) -> None:
    app.setup_extension("sphinx_proof")
    app.add_domain(_ProofDomain, override=True)
