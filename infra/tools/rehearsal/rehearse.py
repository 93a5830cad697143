"""Deploy rehearsal of template.yaml, on this machine.

1. Transform the SAM template with AWS's SAM translator (what `sam deploy`
   sends CloudFormation), after `sam package`'s step: CodeUri points to S3.
2. Lint the transformed template with cfn-lint.
3. Check what a first deploy on a new account meets: every function's
   memory (with the parameters' defaults) within what such an account may
   use, and the stateful resources (table, buckets, key) deleted when the
   first create fails (DeletionPolicy RetainExceptOnCreate), so that a
   failed first deploy can simply be retried.
4. Start moto's server on a free loopback port, and create, update and
   delete the stack in its CloudFormation, checking the stateful resources
   and the functions after creation and what the deletion policies keep.

moto's CloudFormation leaves AWS::ApiGatewayV2::* unrepresented, ignores
Architectures and is more lenient than AWS: a smoke test, not a proof.

Usage: python3 rehearse.py TEMPLATE
"""

import copy
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import zipfile

import functools

import boto3
import yaml
from botocore.config import Config
from samtranslator.translator.transform import transform

print = functools.partial(print, flush=True)  # in order with the errors

REGION = "us-east-1"
CODE_BUCKET = "rehearsal-artifacts"
CODE_KEY = "bootstrap.zip"
# Every parameter at its default: what a first deploy on a new account gives.
PARAMETERS = {}
# The Lambda memory an account new to Lambda may give a function: AWS
# starts new accounts with a reduced memory quota and raises it with use.
NEW_ACCOUNT_MEMORY_MB = 3008
# The resources holding the service's data, kept when the stack is deleted
# or they are removed from it, and deleted when the create that made them
# is rolled back.
STATEFUL = ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::KMS::Key")


class CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation's short forms (!Ref, !GetAtt, !Sub, ...)."""


def _intrinsic(loader, tag_suffix, node):
    name = "Ref" if tag_suffix == "Ref" else "Fn::" + tag_suffix
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag_suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


CfnLoader.add_multi_constructor("!", _intrinsic)


class NoManagedPolicies:
    """The template names no AWS managed policy: nothing to look up."""

    def load(self):
        return {}


def transformed(path):
    with open(path) as f:
        tpl = yaml.load(f, Loader=CfnLoader)
    for res in tpl["Resources"].values():
        if res["Type"] == "AWS::Serverless::Function":
            res["Properties"]["CodeUri"] = f"s3://{CODE_BUCKET}/{CODE_KEY}"
            res.pop("Metadata", None)
    params = {"AWS::Region": REGION, "AWS::AccountId": "123456789012", "AWS::Partition": "aws",
              "AWS::StackName": "genjobs-rehearsal", "AWS::StackId": "x", "AWS::URLSuffix": "amazonaws.com",
              "AWS::NotificationARNs": []}
    params.update(PARAMETERS)
    return transform(copy.deepcopy(tpl), params, NoManagedPolicies())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto():
    port = free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            sys.exit("moto_server exited: " + log.read().decode(errors="replace")[-2000:])
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    sys.exit("moto_server did not answer within 30 s")


def client(service, endpoint):
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION,
                        aws_access_key_id="rehearsal", aws_secret_access_key="rehearsal",
                        config=Config(retries={"max_attempts": 2}))


def wait(cfn, name, want, failing):
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            st = cfn.describe_stacks(StackName=name)["Stacks"][0]
        except Exception as e:  # a deleted stack is gone
            if want == "DELETE_COMPLETE" and "does not exist" in str(e):
                return
            raise
        status = st["StackStatus"]
        if status == want:
            return
        if status in failing or status.endswith("_FAILED"):
            events = cfn.describe_stack_events(StackName=name)["StackEvents"]
            reasons = [f'{e["LogicalResourceId"]}: {e.get("ResourceStatusReason", "")}' for e in events
                       if "FAILED" in e.get("ResourceStatus", "")]
            sys.exit(f"stack {status}: " + "; ".join(reasons[:10]))
        time.sleep(0.5)
    sys.exit(f"stack did not reach {want} within 120 s")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    # The translator asks boto for the Region; nothing here reaches AWS.
    os.environ["AWS_DEFAULT_REGION"] = REGION
    out = transformed(sys.argv[1])
    kinds = sorted({r["Type"] for r in out["Resources"].values()})
    apigw = [k for k, r in out["Resources"].items() if r["Type"].startswith("AWS::ApiGatewayV2::")]
    print(f"rehearsal: SAM transform: {len(out['Resources'])} resources of {len(kinds)} types")

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(out, f)
        path = f.name
    try:
        lint = subprocess.run([sys.executable, "-c", "import sys; from cfnlint.runner import main; sys.exit(main())", path], capture_output=True, text=True)
        if lint.returncode != 0:
            sys.exit("rehearsal: cfn-lint on the transformed template:\n" + lint.stdout + lint.stderr)
        print("rehearsal: cfn-lint on the transformed template: clean")
    finally:
        os.unlink(path)

    first_deploy(out)
    proc, endpoint = start_moto()
    try:
        rehearse(for_moto(out), endpoint, apigw)
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=10)


def first_deploy(out):
    """What a first `sam deploy` on a new account meets, read from the
    transformed template: the functions' memory with the default
    parameters, and the stateful resources' deletion policies."""
    problems = []
    for k, r in sorted(out["Resources"].items()):
        if r["Type"] == "AWS::Lambda::Function":
            mem = r["Properties"].get("MemorySize", 128)
            if isinstance(mem, dict) and "Ref" in mem:
                p = mem["Ref"]
                mem = PARAMETERS.get(p, out["Parameters"][p].get("Default"))
            if int(mem) > NEW_ACCOUNT_MEMORY_MB:
                problems.append(f"{k}: MemorySize {mem} MB by default; a new account may use {NEW_ACCOUNT_MEMORY_MB}")
        if r["Type"] in STATEFUL:
            if r.get("DeletionPolicy") != "RetainExceptOnCreate":
                problems.append(f"{k}: DeletionPolicy {r.get('DeletionPolicy')}; RetainExceptOnCreate, or a failed first "
                                f"create leaves it behind and the retried deploy meets it")
            if r.get("UpdateReplacePolicy") != "Retain":
                problems.append(f"{k}: UpdateReplacePolicy {r.get('UpdateReplacePolicy')}; Retain, or a replacement loses its data")
    if problems:
        sys.exit("rehearsal: a first deploy on a new account:\n  " + "\n  ".join(problems))
    print(f"rehearsal: first deploy: every function within {NEW_ACCOUNT_MEMORY_MB} MB by default; "
          f"table, buckets and key RetainExceptOnCreate")


def for_moto(out):
    """moto knows DeletionPolicy Retain and not RetainExceptOnCreate, which
    AWS treats as Retain in every operation but a rolled-back create: for
    the create that succeeds, the update and the delete rehearsed here,
    moto is handed Retain.

    moto's CloudFormation does not model Cognito (the console's user pool
    and app client): it would refuse every Ref and GetAtt of them. They are
    left out, and what refers to them gets a fixed stand-in value (the SAM
    translator and cfn-lint have checked the real template before)."""
    out = copy.deepcopy(out)
    for r in out["Resources"].values():
        if r.get("DeletionPolicy") == "RetainExceptOnCreate":
            r["DeletionPolicy"] = "Retain"
    cognito = {k for k, r in out["Resources"].items() if r["Type"].startswith("AWS::Cognito::")}
    for k in cognito:
        del out["Resources"][k]

    def stand_in(v):
        if isinstance(v, dict):
            if v.get("Ref") in cognito:
                return "rehearsal-" + v["Ref"]
            att = v.get("Fn::GetAtt")
            if isinstance(att, list) and att and att[0] in cognito:
                return f"arn:aws:cognito-idp:{REGION}:123456789012:userpool/rehearsal-{att[0]}"
            return {k: stand_in(x) for k, x in v.items()}
        if isinstance(v, list):
            return [stand_in(x) for x in v]
        return v

    out["Resources"] = stand_in(out["Resources"])
    out["Outputs"] = stand_in(out.get("Outputs", {}))
    if cognito:
        print(f"rehearsal: note: moto's CloudFormation does not model Cognito; left out: {', '.join(sorted(cognito))}")
    return out


def rehearse(out, endpoint, apigw):
    s3, cfn = client("s3", endpoint), client("cloudformation", endpoint)
    s3.create_bucket(Bucket=CODE_BUCKET)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("bootstrap", "#!/bin/sh\n")
    s3.put_object(Bucket=CODE_BUCKET, Key=CODE_KEY, Body=buf.getvalue())

    name = "genjobs-rehearsal"
    body = json.dumps(out)
    params = [{"ParameterKey": k, "ParameterValue": v} for k, v in PARAMETERS.items()]
    cfn.create_stack(StackName=name, TemplateBody=body, Parameters=params, Capabilities=["CAPABILITY_IAM"])
    wait(cfn, name, "CREATE_COMPLETE", {"ROLLBACK_COMPLETE", "ROLLBACK_IN_PROGRESS"})
    created = {}
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=name):
        for r in page["StackResourceSummaries"]:
            created[r.get("LogicalResourceId")] = r
    want = {k: r["Type"] for k, r in out["Resources"].items()
            if r["Type"] in ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket", "AWS::KMS::Key",
                             "AWS::Lambda::Function", "AWS::Lambda::EventSourceMapping", "AWS::IAM::Role")}
    missing = sorted(k for k in want if k not in created)
    if missing:
        sys.exit(f"rehearsal: created without {missing}")
    absent = sorted({r["Type"] for k, r in out["Resources"].items() if k not in created})
    print(f"rehearsal: create: {len(created)} resources, every table, queue, bucket, key, role, "
          f"function and event source mapping among them; not represented by moto: {', '.join(absent)}")

    # Updates a deployment makes: a parameter that changes the functions,
    # and the one raised after a concurrency quota increase (the queues'
    # MaximumConcurrency and the light lane follow it).
    update = params + [{"ParameterKey": "LogRetentionDays", "ParameterValue": "14"},
                       {"ParameterKey": "AccountConcurrency", "ParameterValue": "100"}]
    cfn.update_stack(StackName=name, TemplateBody=body, Parameters=update, Capabilities=["CAPABILITY_IAM"])
    wait(cfn, name, "UPDATE_COMPLETE", {"UPDATE_ROLLBACK_COMPLETE"})
    print("rehearsal: update: complete")

    table = created["Table"]["PhysicalResourceId"]
    buckets = [created[k]["PhysicalResourceId"] for k, r in out["Resources"].items() if r["Type"] == "AWS::S3::Bucket"]
    cfn.delete_stack(StackName=name)
    wait(cfn, name, "DELETE_COMPLETE", set())
    kept_tables = client("dynamodb", endpoint).list_tables()["TableNames"]
    kept_buckets = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    lost = ([table] if table not in kept_tables else []) + [b for b in buckets if b not in kept_buckets]
    if lost:
        sys.exit(f"rehearsal: the stack's deletion deleted {lost}, which the deletion policies keep")
    print(f"rehearsal: delete: complete; the table and the {len(buckets)} buckets kept")
    print(f"rehearsal: note: moto's CloudFormation does not represent AWS::ApiGatewayV2::* "
          f"({len(apigw)} resources: the HTTP API and its stage, with the routes and integrations of its body, are not rehearsed), "
          f"ignores Architectures and is more lenient than AWS: a smoke test, not a proof")


if __name__ == "__main__":
    main()
