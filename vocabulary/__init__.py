"""The desk's shared vocabulary: pure Python every app may import, and that imports none of them.

Direction and outcomes, money and tick rounding, fills, costs and exits, and the feature bundle the
agents read. No Django, no framework: the layers above (agents, trading, reviews, research) build on
these, so a backtest and the paper book use the very same arithmetic.
"""
