"""`make bench`: Hookline side by side with Celery, RQ, arq and Dramatiq on one Redis and one receiver."""
