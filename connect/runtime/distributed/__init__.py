"""Connect distributed mode: a cluster of workers sharing state through internal topics."""
