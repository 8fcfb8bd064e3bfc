// The reference AT Protocol network (@atproto/dev-env) for musebot's tests and sandbox:
// PLC + PDS + AppView (`TestNetwork`, on the machine's PostgreSQL and Redis, in a fresh schema
// per run), or PLC + PDS alone with `--no-appview` (`TestNetworkNoAppView`, SQLite).
//
// Prints one JSON line when ready: {"pds": url, "appview": url|null, "plc": url, "schema": s}.
// Stops — closing the network and dropping its schemas — on SIGTERM/SIGINT or when its stdin
// closes, so a test harness that dies never leaves it running.
//
// Environment: DB_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/postgres),
// REDIS_HOST (default 127.0.0.1:6379). Run by scripts/bluesky-network.sh, which preloads
// loopback.cjs.
import { TestNetwork, TestNetworkNoAppView } from '@atproto/dev-env';
import pg from 'pg';

const noAppView = process.argv.includes('--no-appview');
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
    let names = [`appview_${schema}`, `bsync_${schema}`, `ozone_${schema}`];
    if (stale) {
      const found = await client.query(
        "SELECT nspname FROM pg_namespace WHERE nspname ~ '^(appview|bsync|ozone)_musebot_[a-j]+_[a-j]+$'",
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

let network;
let stopping = false;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  const timer = setTimeout(() => process.exit(code), 10_000);
  timer.unref();
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
console.log(
  JSON.stringify({
    pds: network.pds.url,
    appview: noAppView ? null : network.bsky.url,
    plc: network.plc.url,
    schema,
  }),
);
