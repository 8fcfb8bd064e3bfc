// Preloaded with `node --require` by network.mjs's launcher: every server the reference AT
// Protocol network starts without a host (the PDS, AppView, PLC and their helpers listen on all
// interfaces by default) listens on 127.0.0.1 instead, so the sandbox is never reachable from
// the network. The test harness checks the result with `ss -ltn`.
'use strict';
const net = require('net');

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first === undefined || first === null || typeof first === 'function') {
    args.unshift(0, '127.0.0.1');
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    if (typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  } else if (typeof first === 'object' && first.path === undefined && !first.host) {
    args[0] = { ...first, host: '127.0.0.1' };
  }
  return listen.apply(this, args);
};
