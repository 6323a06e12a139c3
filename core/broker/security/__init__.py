"""Who a connection is (its principal) and what it may do: authentication and authorization."""
