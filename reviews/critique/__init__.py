"""The critique agent: an independent, evidence-first review of a strategy's trajectory, binding on its runs."""
