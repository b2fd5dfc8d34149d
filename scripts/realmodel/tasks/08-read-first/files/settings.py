# Default settings of the service. Values are strings, as read from the environment.
DEFAULTS = {
    "service_name": "inventory",
    "request_timeout_seconds": "45",
    "retries": "3",
}
