"""A small GRPO-style RL trainer on CPU that shows mindspeed-prof end to end."""
