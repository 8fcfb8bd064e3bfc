// The reference AT Protocol network (@atproto/dev-env) for musebot's tests and sandbox:
// PLC + PDS + AppView (`TestNetwork`, on the machine's PostgreSQL and Redis, in a fresh schema
// per run), or PLC + PDS alone with `--no-appview` (`TestNetworkNoAppView`, SQLite).
//
// Prints one JSON line when ready: {"pds": url, "appview": url|null, "plc": url, "schema": s}.
//
// With `--labeler` (needs the AppView) it also sets up a labeler whose identity is an ordinary
// account on the PDS (the bot's own): the account `musebot-labeler.test`, its DID document
// extended with `#atproto_labeler` (a second Ozone) and `#atproto_label` (that Ozone's signing
// key); that Ozone, run as the account's DID with the account as an admin; and a label ingester
// that plays production's AppView: it follows the Ozone's com.atproto.label.subscribeLabels and
// writes every label (negations and `exp` included) into the AppView's `label` table. The
// labeler's app.bsky.labeler.service record is not written (the bot does that). The ready line
// then has "labeler": {"handle", "password", "did", "ozone", "signingKey"}.
// Stops — closing the network and dropping its schemas — on SIGTERM/SIGINT or when its stdin
// closes, so a test harness that dies never leaves it running. Lines on stdin: `ozone-stop`
// closes the labeler's Ozone (its database kept), `ozone-start` starts it again on the same
// port, key and database (a restart, for the tests).
//
// Environment: DB_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/postgres),
// REDIS_HOST (default 127.0.0.1:6379). Run by scripts/bluesky-network.sh, which preloads
// loopback.cjs.
import net from 'node:net';
import { Secp256k1Keypair, verifySignature } from '@atproto/crypto';
import { TestNetwork, TestNetworkNoAppView, TestOzone } from '@atproto/dev-env';
import { cborEncode } from '@atproto/lex-cbor';
import { Subscription } from '@atproto/xrpc-server';
import pg from 'pg';

const noAppView = process.argv.includes('--no-appview');
const withLabeler = !noAppView && process.argv.includes('--labeler');
const LABELER = {
  handle: 'musebot-labeler.test',
  email: 'musebot-labeler@test.com',
  password: 'musebot-labeler-pass',
};
const dbUrl = process.env.DB_POSTGRES_URL || 'postgresql://postgres@127.0.0.1:5432/postgres';
process.env.REDIS_HOST = process.env.REDIS_HOST || '127.0.0.1:6379';
// Schemas may hold only [A-Za-z_]: the digits of pid and time are written as letters.
const letters = (n) => String(n).replace(/[0-9]/g, (d) => 'abcdefghij'[d]);
const schema = `musebot_${letters(process.pid)}_${letters(Date.now())}`;

// Drops this run's schemas, or (`stale`) those of earlier runs whose process is gone (a run
// killed before it could clean up).
async function dropSchemas(stale = false) {
  if (noAppView) return;
  const client = new pg.Client({ connectionString: dbUrl });
  try {
    await client.connect();
    let names = [`appview_${schema}`, `bsync_${schema}`, `ozone_${schema}`, `labeler_${schema}`];
    if (stale) {
      const found = await client.query(
        "SELECT nspname FROM pg_namespace WHERE nspname ~ '^(appview|bsync|ozone|labeler)_musebot_[a-j]+_[a-j]+$'",
      );
      names = found.rows
        .map((r) => r.nspname)
        .filter((n) => {
          const pid = Number(n.split('_')[2].replace(/[a-j]/g, (c) => String(c.charCodeAt(0) - 97)));
          try {
            process.kill(pid, 0);
            return false;
          } catch {
            return true;
          }
        });
    }
    for (const s of names) {
      await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    }
  } catch (e) {
    console.error(`network: could not drop schemas: ${e.message}`);
  } finally {
    await client.end().catch(() => {});
  }
}

// A free port on the loopback interface (the labeler's Ozone URL must be in its DID document
// before that Ozone can start).
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// The labeler account: created on the PDS, then (as any user would, through the PDS) its DID
// document gets `#atproto_labeler` and `#atproto_label`; the PLC-operation token that the PDS
// "mails" is read from its database.
async function createLabelerAccount(network, ozoneUrl, key) {
  const agent = network.pds.getAgent();
  await agent.createAccount(LABELER);
  const did = agent.assertDid;
  const creds = await agent.com.atproto.identity.getRecommendedDidCredentials();
  await agent.com.atproto.identity.requestPlcOperationSignature();
  const { token } = await network.pds.ctx.accountManager.db.db
    .selectFrom('email_token')
    .select('token')
    .where('did', '=', did)
    .where('purpose', '=', 'plc_operation')
    .executeTakeFirstOrThrow();
  const op = {
    ...creds.data,
    token,
    services: {
      ...creds.data.services,
      atproto_labeler: { type: 'AtprotoLabeler', endpoint: ozoneUrl },
    },
    verificationMethods: { ...creds.data.verificationMethods, atproto_label: key.did() },
  };
  const signed = await agent.com.atproto.identity.signPlcOperation(op);
  await agent.com.atproto.identity.submitPlcOperation({ operation: signed.data.operation });
  // Forget any cached copy of the old document.
  await network.pds.ctx.idResolver.did.resolve(did, true);
  await network.bsky.ctx.idResolver.did.resolve(did, true);
  return did;
}

// The label ingester: follows the labeler Ozone's subscribeLabels from the start (and, after a
// reconnect, from the last seq seen) and upserts each label into the AppView's `label` table,
// keyed like it (src, uri, cid, val): a negation sets neg, a re-emission replaces cts/exp. Labels
// whose signature does not verify against the labeler's `#atproto_label` key are dropped.
function runLabelIngester(ozoneUrl, labelerDid, keyDid, bskyDb, signal) {
  let cursor = 0;
  const sub = new Subscription({
    service: ozoneUrl.replace(/^http/, 'ws'),
    method: 'com.atproto.label.subscribeLabels',
    signal,
    // Back soon after an Ozone restart.
    maxReconnectSeconds: 2,
    getParams: () => ({ cursor }),
    validate: (v) => v,
  });
  (async () => {
    for await (const evt of sub) {
      if (typeof evt?.seq !== 'number' || !Array.isArray(evt.labels)) continue;
      for (const label of evt.labels) {
        const { sig, ...unsigned } = label;
        const ok =
          label.src === labelerDid &&
          sig instanceof Uint8Array &&
          (await verifySignature(keyDid, cborEncode(unsigned), sig).catch(() => false));
        if (!ok) {
          console.error(`network: label ingester: dropped label with a bad source or signature: ${label.uri} ${label.val}`);
          continue;
        }
        const row = {
          src: label.src,
          uri: label.uri,
          cid: label.cid ?? '',
          val: label.val,
          neg: label.neg === true,
          cts: label.cts,
          exp: label.exp ?? null,
        };
        await bskyDb.db
          .insertInto('label')
          .values(row)
          .onConflict((oc) =>
            oc.columns(['src', 'uri', 'cid', 'val']).doUpdateSet({ neg: row.neg, cts: row.cts, exp: row.exp }),
          )
          .execute();
      }
      cursor = evt.seq;
    }
  })().catch((e) => {
    if (!signal.aborted) console.error(`network: label ingester stopped: ${e.stack || e}`);
  });
}

let network;
let labelerOzone;
const ingesterAbort = new AbortController();
let stopping = false;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  const timer = setTimeout(() => process.exit(code), 10_000);
  timer.unref();
  try {
    ingesterAbort.abort();
    if (labelerOzone) await labelerOzone.close();
  } catch (e) {
    console.error(`network: labeler close failed: ${e.message}`);
  }
  try {
    if (network) await network.close();
  } catch (e) {
    console.error(`network: close failed: ${e.message}`);
  }
  await dropSchemas();
  process.exit(code);
}

process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));
process.stdin.on('end', () => stop(0));
process.stdin.on('close', () => stop(0));
let ozoneConfig = null;
let commands = Promise.resolve();
let pending = '';
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const cmd = pending.slice(0, nl).trim();
    pending = pending.slice(nl + 1);
    commands = commands.then(() => command(cmd)).catch((e) => console.error(`network: ${cmd} failed: ${e.stack || e}`));
  }
});
async function command(cmd) {
  if (cmd === 'ozone-stop' && labelerOzone) {
    await labelerOzone.close();
    labelerOzone = null;
    console.error('network: the labeler Ozone stopped');
  } else if (cmd === 'ozone-start' && !labelerOzone && ozoneConfig) {
    labelerOzone = await TestOzone.create(ozoneConfig);
    console.error('network: the labeler Ozone started again');
  } else if (cmd) {
    console.error(`network: unknown or untimely command: ${cmd}`);
  }
}
process.stdin.resume();

await dropSchemas(true);
try {
  network = noAppView
    ? await TestNetworkNoAppView.create({})
    : await TestNetwork.create({ dbPostgresUrl: dbUrl, dbPostgresSchema: schema });
} catch (e) {
  console.error(`network: failed to start: ${e.stack || e}`);
  await stop(1);
}
let labeler = null;
if (withLabeler) {
  try {
    const key = await Secp256k1Keypair.create({ exportable: true });
    const port = await freePort();
    const ozoneUrl = `http://localhost:${port}`;
    const did = await createLabelerAccount(network, ozoneUrl, key);
    const config = {
      port,
      plcUrl: network.plc.url,
      signingKey: key,
      serverDid: did,
      dbPostgresSchema: `labeler_${schema}`,
      dbPostgresUrl: dbUrl,
      appviewUrl: network.bsky.url,
      appviewDid: network.bsky.ctx.cfg.serverDid,
      appviewPushEvents: false,
    };
    labelerOzone = await TestOzone.create(config);
    await labelerOzone.addAdminDid(did);
    // A restart finds the account in the team table; the configuration names it an admin too.
    ozoneConfig = { ...config, adminDids: [did] };
    runLabelIngester(ozoneUrl, did, key.did(), network.bsky.db, ingesterAbort.signal);
    await network.processAll();
    labeler = {
      handle: LABELER.handle,
      password: LABELER.password,
      did,
      ozone: ozoneUrl,
      signingKey: key.did(),
    };
  } catch (e) {
    console.error(`network: failed to start the labeler: ${e.stack || e}`);
    await stop(1);
  }
}
console.log(
  JSON.stringify({
    pds: network.pds.url,
    appview: noAppView ? null : network.bsky.url,
    plc: network.plc.url,
    schema,
    ...(labeler ? { labeler } : {}),
  }),
);
