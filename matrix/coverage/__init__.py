"""Coverage over all runners: shard reports merged into one arch x backend x topk x page-size view."""
