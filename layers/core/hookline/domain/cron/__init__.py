"""Cron schedules: expressions in an IANA timezone, their fire times under explicit DST rules, the model."""
