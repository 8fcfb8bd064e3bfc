#!/usr/bin/env python3
"""The local Bluesky for scripts/try.sh --bluesky: accounts, a claim and a mention, the thread.

  bluesky_sandbox.py accounts PDS OUT.json [LABELER.json]
                                                create alice, bob and the bot (with an app password);
                                                with LABELER.json (network.mjs --labeler's "labeler"),
                                                the bot is that labeler account
  bluesky_sandbox.py ask PDS ACCOUNTS.json CLAIM  alice posts CLAIM, bob mentions the bot under it;
                                                prints the mention's at-URI
  bluesky_sandbox.py thread PDS ACCOUNTS.json URI [SECONDS]
                                                waits for the bot's reply under URI (the AppView's
                                                getPostThread) and prints the thread
  bluesky_sandbox.py labels APPVIEW ACCOUNTS.json URI [SECONDS] [EVIDENCE_URL]
                                                the post URI's mention asked about, as a reader who
                                                subscribes to the bot's labeler sees it and as one
                                                who does not; and its evidence page

Standard library only; talks XRPC to the reference PDS on loopback.
"""
import datetime
import html
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def xrpc(pds, nsid, body=None, jwt=None, params=None):
    url = f"{pds}/xrpc/{nsid}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    req.add_header("content-type", "application/json")
    if jwt:
        req.add_header("authorization", f"Bearer {jwt}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{nsid}: HTTP {e.code}: {e.read().decode(errors='replace')}")


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def accounts(pds, out, labeler=None):
    accts = {}
    if labeler:
        lab = json.load(open(labeler))
        made = xrpc(pds, "com.atproto.server.createSession",
                    {"identifier": lab["handle"], "password": lab["password"]})
        app = xrpc(pds, "com.atproto.server.createAppPassword", {"name": "musebot"}, made["accessJwt"])
        accts["musebot"] = {"handle": lab["handle"], "did": made["did"], "jwt": made["accessJwt"],
                            "app_password": app["password"]}
    for name in ["alice", "bob"] + ([] if labeler else ["musebot"]):
        handle = f"{name}.test"
        password = f"try-{name}-password"
        made = xrpc(pds, "com.atproto.server.createAccount",
                    {"handle": handle, "email": f"{name}@try.invalid", "password": password})
        app = xrpc(pds, "com.atproto.server.createAppPassword", {"name": "musebot"}, made["accessJwt"])
        accts[name] = {"handle": handle, "did": made["did"], "jwt": made["accessJwt"],
                       "app_password": app["password"]}
    json.dump(accts, open(out, "w"))


def post(pds, who, text, reply=None, facets=None):
    record = {"$type": "app.bsky.feed.post", "text": text, "createdAt": now(), "langs": ["en"]}
    if reply:
        record["reply"] = reply
    if facets:
        record["facets"] = facets
    return xrpc(pds, "com.atproto.repo.createRecord",
                {"repo": who["did"], "collection": "app.bsky.feed.post", "record": record}, who["jwt"])


def ask(pds, accts, claim):
    a = json.load(open(accts))
    target = post(pds, a["alice"], claim)
    ref = {"uri": target["uri"], "cid": target["cid"]}
    bot = a["musebot"]
    text = f"@{bot['handle']} is this true?"
    facets = [{"index": {"byteStart": 0, "byteEnd": len(bot["handle"]) + 1},
               "features": [{"$type": "app.bsky.richtext.facet#mention", "did": bot["did"]}]}]
    mention = post(pds, a["bob"], text, {"root": ref, "parent": ref}, facets)
    print(mention["uri"])


def thread(pds, accts, uri, seconds=180):
    a = json.load(open(accts))
    bot_did = a["musebot"]["did"]
    deadline = time.time() + float(seconds)
    while True:
        try:
            t = xrpc(pds, "app.bsky.feed.getPostThread", jwt=a["alice"]["jwt"],
                     params={"uri": uri, "depth": 10, "parentHeight": 5})["thread"]
        except SystemExit as e:
            # The AppView indexes a new post a moment after the PDS takes it.
            if "NotFound" in str(e) and time.time() < deadline:
                time.sleep(1)
                continue
            raise
        if any(r["post"]["author"]["did"] == bot_did for r in t.get("replies", [])) or time.time() > deadline:
            break
        time.sleep(1)
    print("\n── the thread on the local Bluesky (reference PDS + AppView) ──")
    parent = t.get("parent")
    if parent and "post" in parent:
        print(f"@{parent['post']['author']['handle']}: {parent['post']['record']['text']}")
    print(f"  └ @{t['post']['author']['handle']}: {t['post']['record']['text']}")

    def walk(node, depth):
        found = False
        for r in node.get("replies", []):
            p = r["post"]
            links = [f["features"][0].get("uri") or f["features"][0].get("did")
                     for f in p["record"].get("facets", [])]
            extra = f"   [facets: {', '.join(links)}]" if links else ""
            print("  " * depth + f"  └ @{p['author']['handle']}: {p['record']['text']}{extra}")
            found = found or p["author"]["did"] == bot_did
            found = walk(r, depth + 1) or found
        return found

    if not walk(t, 1):
        print("no reply from the bot yet — see the daemon log")
        sys.exit(1)


def get(base, nsid, params, headers=None):
    req = urllib.request.Request(f"{base}/xrpc/{nsid}?" + urllib.parse.urlencode(params, doseq=True))
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def labels(appview, accts, mention_uri, seconds=30, evidence_url=None):
    a = json.load(open(accts))
    bot = a["musebot"]["did"]
    asked = get(appview, "app.bsky.feed.getPostThread", {"uri": mention_uri, "parentHeight": 1})
    target = asked["thread"]["parent"]["post"]["uri"]
    names = {}
    for d in get(appview, "app.bsky.labeler.getServices", {"dids": bot, "detailed": "true"})["views"][0]["policies"].get(
            "labelValueDefinitions", []):
        en = next((l for l in d["locales"] if l["lang"] == "en"), d["locales"][0])
        names[d["identifier"]] = en

    def seen(header):
        view = get(appview, "app.bsky.feed.getPosts", {"uris": [target]},
                   {"atproto-accept-labelers": header} if header else None)["posts"][0]
        return [l["val"] for l in view.get("labels", []) if l["src"] == bot and not l.get("neg")]

    deadline = time.time() + float(seconds)
    while not seen(bot) and time.time() < deadline:
        time.sleep(1)
    print("\n── the checked post's labels on the local Bluesky (AppView getPosts) ──")
    on = seen(bot)
    if on:
        for v in on:
            n = names.get(v, {})
            print(f"a reader subscribed to @{a['musebot']['handle']} (atproto-accept-labelers) sees: "
                  f"[{n.get('name', v)}] {n.get('description', '')}")
    else:
        print("no label from the bot on the post (its verdict may carry none, e.g. \"could not verify\")")
    print(f"a reader who does not subscribe sees: {seen(None) or 'no label of the bot'}")
    if on and evidence_url:
        url = f"{evidence_url}?" + urllib.parse.urlencode({"post": target})
        with urllib.request.urlopen(url, timeout=30) as r:
            page = r.read().decode()
        body = page.split("<h1>", 1)[-1].split("<form", 1)[0]
        text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", "<h1>" + body))).strip()
        print(f"\n── the evidence page behind the label ({url}) ──\n{text}")
    return on


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"accounts": accounts, "ask": ask, "thread": thread, "labels": labels}[cmd](*args)
