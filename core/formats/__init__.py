"""Date formats of the portal's languages (FORMAT_MODULE_PATH): Django admin shows dates and
times as the portal's pages do, ISO-like and on a 24-hour clock."""
