"""Rich tool artifacts: HTML or markdown a tool produces for the UI, not for the model (SPEC R2.9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages.tool import ToolOutputMixin

ARTIFACT_NOTE = "[Artifact generated: {filename}] The content is rendered as a preview in the UI and is not shown here."
"""What the model is told instead of the artifact's content (SPEC R2.9)."""


@dataclass(frozen=True)
class Artifact(ToolOutputMixin):
    """An HTML or markdown document returned by a tool.

    Return one from a tool function (``return Artifact("report.html", html)``), or from a
    tool declared with ``response_format="content_and_artifact"`` as its artifact. The
    model only sees :data:`ARTIFACT_NOTE` (plus the tool's own content, when it returned
    content and artifact); the artifact goes to the step, the result and the
    ``iteration`` event.

    Attributes:
        filename: Name shown to the user and in the note, e.g. ``"oee_report.html"``.
        content: The document text.
        kind: ``"html"`` or ``"markdown"``.
    """

    filename: str
    content: str
    kind: Literal["html", "markdown"] = "html"

    def note(self) -> str:
        """The short observation sent to the model in place of the content."""
        return ARTIFACT_NOTE.format(filename=self.filename)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (``filename``, ``content``, ``kind``), as stored in state."""
        return {"filename": self.filename, "content": self.content, "kind": self.kind}
