"""Prints one CSV row (model,config,concurrency,img/s,p50,p99,errors) from a glimpse-load --json file.
img/s counts images (a call with an `images` array counts each of them); latency is per request."""
import json
import sys

run = json.load(open(sys.argv[1]))["runs"][0]
lat = run["latency"]
per_request = run["calls"] / run["requests"] if run.get("requests") else 1
print(f"{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},{run['achievedRate'] * per_request:.1f},{lat['p50']:.2f},{lat['p99']:.2f},{run['errors']}")
