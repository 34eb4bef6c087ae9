"""The parts every study plot shares: its figure, wrapped title, legend below the axes (with
a note as its title) and the saved PNG."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

__all__ = ["CARRY_FORWARD_NOTE", "add_legend", "new_figure", "save_figure", "set_title"]

#: The note plotted under every per-round / per-step mean curve.
CARRY_FORWARD_NOTE = (
    "Mean over seeds; a seed that stopped early (early stopping) keeps its last value in the "
    "mean after its last round (x: where a seed stopped)."
)


def new_figure(plt: Any, width: float = 7.0, height: float = 4.8) -> tuple[Any, Any]:
    return plt.subplots(figsize=(width, height), layout="constrained")


def set_title(ax: Any, text: str, width: int = 55) -> None:
    ax.set_title("\n".join(textwrap.wrap(text, width)), fontsize=10)


def add_legend(fig: Any, ax: Any, note: str | None = CARRY_FORWARD_NOTE, ncols: int = 3) -> None:
    """The legend below the axes (never over the data) in up to ``ncols`` columns, the note
    as its title."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(
            handles,
            labels,
            loc="outside lower center",
            ncols=min(ncols, len(labels)),
            fontsize=7,
            frameon=False,
            title="\n".join(textwrap.wrap(note, 100)) if note else None,
            title_fontsize=7,
        )


def save_figure(plt: Any, fig: Any, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
