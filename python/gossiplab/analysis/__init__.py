"""From a run's event tables to its numbers: tables, metrics, headline, results folder."""
