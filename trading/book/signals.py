"""What the book announces, for the layers above trading (reviews) to act on without trading
importing them. A live close sends the review task by name (see ``broker``); a history replay needs
its reviews at once, in order, so it sends these instead and the reviews app answers them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with ``position`` (closed) and ``lessons_to_live`` (bool): review it now, in this process.
replay_position_closed = Signal()
# Sent with ``account`` before a replay account's positions are deleted: whatever the layers above
# keep about those positions (reviews, the lessons they wrote to memory) goes first.
replay_account_clearing = Signal()
