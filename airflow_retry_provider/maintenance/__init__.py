"""Maintenance jobs run by the provider's DAGs: queue gauges, retention, the work-unit sweeper."""
