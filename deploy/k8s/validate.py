#!/usr/bin/env python3
"""Validates what kubernetes-validate cannot: the manifests of deploy/k8s/ whose kinds have no schema in it.

    .build/kserve-venv/bin/python deploy/k8s/validate.py deploy/k8s/*.yaml
    .build/kserve-venv/bin/python deploy/k8s/validate.py --dump deploy/k8s/*.yaml   # every document as JSON

Run it beside kubernetes-validate, which checks the built-in kinds (Deployment, Service, ...) against the
Kubernetes OpenAPI schemas it bundles:

    .build/k8s-venv/bin/kubernetes-validate --strict -k 1.30.0 -k 1.37.0 deploy/k8s/*.yaml

kubernetes-validate only warns, and exits 0, for a kind it has no schema for ("Couldn't find schema for kind
ServingRuntime"): it knows no CustomResourceDefinitions and has no option to load one. This script covers
those kinds, and fails on any other kind it meets that is not a built-in one:

- KServe's ServingRuntime, ClusterServingRuntime and InferenceService, against the models KServe generates
  from its CRDs' OpenAPI schemas (the kserve 0.21.0 wheel, installed in .build/kserve-venv for the Open
  Inference Protocol tests). The wheel ships no CRD YAML to run jsonschema on, and KServe's
  `ApiClient.deserialize` drops unknown fields silently (an InferenceService with `storageURI` comes back
  with storage_uri None), so each document is walked against the models' `attribute_map` /
  `openapi_types`: an unknown field, or a value of the wrong type, is an error, at every depth. Nested
  Kubernetes types (V1Container, V1Probe, ...) come from the kubernetes client, whose models are pydantic
  classes with `extra="forbid"` and strict types; each such object is also validated by its class
  (required fields, int-or-string). KServe's own classes check their required fields when built. One
  difference from the API server: the client types resource quantities as strings, so write `cpu: "2"`,
  not `cpu: 2`, in kserve.yaml.
- Kustomization: no schema ships offline either. Its top-level keys must be kustomize's, every listed
  resource must exist, and every other manifest in the folder must be listed or named in EXCLUDED.
- prometheus-adapter's config inside its ConfigMap (a string to Kubernetes): the keys of the adapter's
  config structs (pkg/config/config.go), the template placeholders, and the PromQL, parsed by promtool
  (Debian's prometheus package, installed by scripts/setup.sh --test) with the placeholders filled in.

Exit status: 0 when everything passes, 1 when something does not, 2 when a tool is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

EXCLUDED = {
    "kserve.yaml": "needs KServe's CRDs",
    "prometheus-adapter-rules.yaml": "prometheus-adapter's config, in its own namespace",
}
KUSTOMIZE_KEYS = {
    "apiVersion", "kind", "metadata", "resources", "components", "crds", "bases", "namespace", "namePrefix",
    "nameSuffix", "labels", "commonLabels", "commonAnnotations", "images", "replicas", "patches",
    "patchesStrategicMerge", "patchesJson6902", "replacements", "vars", "configMapGenerator", "secretGenerator",
    "generatorOptions", "helmCharts", "helmGlobals", "configurations", "generators", "transformers", "validators",
    "openapi", "sortOptions", "buildMetadata",
}
ADAPTER_KEYS = {
    "config": {"rules", "resourceRules", "externalRules"},
    "rule": {"seriesQuery", "seriesFilters", "resources", "name", "metricsQuery", "labelValueReplacements"},
    "resources": {"template", "overrides"},
    "override": {"group", "resource"},
    "name": {"matches", "as"},
}
PLACEHOLDERS = {"<<.Series>>", "<<.LabelMatchers>>", "<<.GroupBy>>"}
PRIMITIVES = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float), "datetime": (str,),
              "date": (str,), "ResourceQuantity": (str, int, float)}


def kserve_kinds():
    import kserve.models as km
    return {
        ("serving.kserve.io/v1alpha1", "ServingRuntime"): km.V1alpha1ServingRuntime,
        ("serving.kserve.io/v1alpha1", "ClusterServingRuntime"): km.V1alpha1ClusterServingRuntime,
        ("serving.kserve.io/v1beta1", "InferenceService"): km.V1beta1InferenceService,
    }


def model_class(name):
    import kserve.models as km
    import kubernetes.client.models as k8s
    return getattr(km, name, None) or getattr(k8s, name, None)


def check_value(value, type_name, path, errors, nested=False):
    """Checks `value` against an openapi_types entry ('list[V1Container]', 'Dict[str, str]', 'V1Probe', ...).
    `nested`: inside a pydantic object, whose own validation covers this value."""
    t = type_name.strip()
    if m := re.fullmatch(r"[Ll]ist\[(.+)\]", t):
        if not isinstance(value, list):
            return errors.append(f"{path}: expected a list, found {type(value).__name__}")
        for i, item in enumerate(value):
            check_value(item, m.group(1), f"{path}[{i}]", errors, nested)
    elif m := re.fullmatch(r"dict\(str, *(.+)\)|Dict\[str, *(.+)\]", t):
        if not isinstance(value, dict):
            return errors.append(f"{path}: expected a map, found {type(value).__name__}")
        for key, item in value.items():
            check_value(item, m.group(1) or m.group(2), f"{path}.{key}", errors, nested)
    elif t == "object":
        pass  # int-or-string, raw extensions, status: the class check below covers what it can
    elif t in PRIMITIVES:
        ok = isinstance(value, PRIMITIVES[t]) and not (t in ("int", "float") and isinstance(value, bool))
        if not ok:
            errors.append(f"{path}: expected {t}, found {type(value).__name__} {value!r}")
    else:
        check_object(value, t, path, errors, nested)


def check_object(value, type_name, path, errors, nested=False):
    cls = model_class(type_name)
    if cls is None:
        return errors.append(f"{path}: no model class for type {type_name}")
    if not isinstance(value, dict):
        return errors.append(f"{path}: expected an object ({type_name}), found {type(value).__name__}")
    by_key = {json_key: attr for attr, json_key in cls.attribute_map.items()}
    pydantic, found = hasattr(cls, "model_validate"), len(errors)
    for key, item in value.items():
        if key not in by_key:
            errors.append(f"{path}: unknown field {key!r} for {type_name}")
        else:
            check_value(item, cls.openapi_types[by_key[key]], f"{path}.{key}", errors, nested or pydantic)
    if pydantic and (nested or len(errors) > found):
        pass  # validated with the outermost pydantic object; or already failed, with a clearer path
    elif pydantic:  # the kubernetes client's models: required fields, int-or-string, nested objects
        try:
            cls.model_validate(value)
        except Exception as e:  # pydantic.ValidationError
            problems = [f"{'.'.join(map(str, d['loc']))}: {d['msg']}" for d in e.errors()] if hasattr(e, "errors") else [str(e)]
            errors.extend(f"{path}: {type_name}: {p}" for p in problems)
    else:  # KServe's generated classes: required fields raise ValueError in the constructor
        try:
            cls(**{by_key[k]: v for k, v in value.items() if k in by_key})
        except (ValueError, TypeError) as e:
            errors.append(f"{path}: {type_name}: {e}")


def check_kustomization(doc, filename, errors):
    folder = os.path.dirname(os.path.abspath(filename))
    for key in doc:
        if key not in KUSTOMIZE_KEYS:
            errors.append(f"unknown Kustomization field {key!r}")
    listed = doc.get("resources") or []
    for resource in listed:
        if not os.path.exists(os.path.join(folder, resource)):
            errors.append(f"resources: {resource} does not exist")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".yaml") and name != os.path.basename(filename) and name not in listed and name not in EXCLUDED:
            errors.append(f"{name} is neither listed in resources nor in validate.py's EXCLUDED")


def check_keys(obj, allowed, path, errors):
    if not isinstance(obj, dict):
        return errors.append(f"{path}: expected a map")
    for key in obj:
        if key not in allowed:
            errors.append(f"{path}: unknown field {key!r}")


def check_adapter_rule(rule, path, errors, promql):
    check_keys(rule, ADAPTER_KEYS["rule"], path, errors)
    for key in ("seriesQuery", "resources", "name", "metricsQuery"):
        if key not in rule:
            errors.append(f"{path}: {key} is missing")
    resources = rule.get("resources", {})
    check_keys(resources, ADAPTER_KEYS["resources"], f"{path}.resources", errors)
    for label, target in (resources.get("overrides") or {}).items():
        check_keys(target, ADAPTER_KEYS["override"], f"{path}.resources.overrides.{label}", errors)
        if not isinstance(target, dict) or not target.get("resource"):
            errors.append(f"{path}.resources.overrides.{label}: resource is missing")
    check_keys(rule.get("name", {}), ADAPTER_KEYS["name"], f"{path}.name", errors)
    try:
        re.compile(rule.get("name", {}).get("matches", ""))
    except re.error as e:
        errors.append(f"{path}.name.matches: {e}")
    query = rule.get("metricsQuery", "")
    for placeholder in set(re.findall(r"<<[^>]*>>", query)) - PLACEHOLDERS:
        errors.append(f"{path}.metricsQuery: unknown placeholder {placeholder}")
    series = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", rule.get("seriesQuery", ""))
    promql.append(rule.get("seriesQuery", ""))
    promql.append(query.replace("<<.Series>>", series.group(0) if series else "up")
                  .replace("<<.LabelMatchers>>", 'namespace="default",pod=~"glimpse-a|glimpse-b"')
                  .replace("<<.GroupBy>>", "pod"))


def check_promql(expressions, errors):
    promtool = shutil.which("promtool")
    if promtool is None:
        print("promtool is not installed (scripts/setup.sh --test installs Debian's prometheus package)")
        sys.exit(2)
    rules = {"groups": [{"name": "adapter", "rules": [{"record": f"adapter:expr_{i}", "expr": e}
                                                       for i, e in enumerate(expressions)]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump(rules, f)
    try:
        out = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        errors.append("promtool check rules: " + (out.stdout + out.stderr).strip())


def check_adapter_config(doc, errors):
    config = yaml.safe_load((doc.get("data") or {}).get("config.yaml", "")) or {}
    check_keys(config, ADAPTER_KEYS["config"], "config.yaml", errors)
    promql = []
    for i, rule in enumerate(config.get("rules") or []):
        check_adapter_rule(rule, f"config.yaml.rules[{i}]", errors, promql)
    if not config.get("rules"):
        errors.append("config.yaml: no rules")
    if promql:
        check_promql(promql, errors)


def builtin(api_version):
    """A group Kubernetes itself serves (core, apps, policy, autoscaling, *.k8s.io), so kubernetes-validate's."""
    group = api_version.rpartition("/")[0]
    return "." not in group or (group.endswith(".k8s.io") and group != "kustomize.config.k8s.io")


def validate(doc, filename, kinds):
    """Returns (what was done, errors) for one document."""
    key = (doc.get("apiVersion", ""), doc.get("kind", ""))
    errors = []
    if key in kinds:
        check_object(doc, kinds[key].__name__, doc["kind"], errors)
        return "checked against KServe's models", errors
    if key == ("kustomize.config.k8s.io/v1beta1", "Kustomization"):
        check_kustomization(doc, filename, errors)
        return "checked as a kustomization", errors
    if key[1] == "ConfigMap" and doc.get("metadata", {}).get("labels", {}).get("app.kubernetes.io/name") == "prometheus-adapter":
        check_adapter_config(doc, errors)
        return "checked its prometheus-adapter config (the ConfigMap itself is kubernetes-validate's)", errors
    if builtin(key[0]):
        return "built-in kind, left to kubernetes-validate", errors
    return "unknown", [f"no schema for {key[1]} ({key[0]}): neither kubernetes-validate nor validate.py checks it"]


def load(filename):
    with open(filename) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def dump(filenames):
    """Every document by file name, with a ConfigMap's embedded YAML documents parsed beside its data."""
    out = {}
    for filename in filenames:
        docs = load(filename)
        for doc in docs:
            if doc.get("kind") == "ConfigMap":
                doc["parsedData"] = {k: yaml.safe_load(v) for k, v in (doc.get("data") or {}).items() if k.endswith(".yaml")}
        out[os.path.basename(filename)] = docs
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


def main(argv):
    if argv[:1] == ["--dump"]:
        return dump(argv[1:]) or 0
    if not argv:
        print(__doc__)
        return 2
    kinds, failed = kserve_kinds(), False
    for filename in argv:
        for doc in load(filename):
            name = "/".join(filter(None, [doc.get("kind", "?").lower(), (doc.get("metadata") or {}).get("name")]))
            what, errors = validate(doc, filename, kinds)
            for e in errors:
                print(f"ERROR {filename} {name}: {e}")
            failed |= bool(errors)
            if not errors:
                print(f"INFO {filename} {name}: {what}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
