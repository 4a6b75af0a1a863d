"""Prints one CSV row (model,config,concurrency,img/s,p50,p99,errors) from a glimpse-load --json file."""
import json
import sys

run = json.load(open(sys.argv[1]))["runs"][0]
lat = run["latency"]
print(f"{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},{run['achievedRate']:.1f},{lat['p50']:.2f},{lat['p99']:.2f},{run['errors']}")
