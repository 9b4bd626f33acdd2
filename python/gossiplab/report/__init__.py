"""The HTML report of a run: figures, pages and the overlays that compare runs."""
