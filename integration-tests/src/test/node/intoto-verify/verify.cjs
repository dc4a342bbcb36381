'use strict';
// node verify.cjs BUNDLE.json PUBLIC_KEY_HEX
// Verifies a `sandboxctl runs export --intoto` file with sigstore-js alone: the bundle is parsed
// and validated by @sigstore/bundle, the DSSE signature checked by @sigstore/verify's Verifier
// against the one Ed25519 key given (the key selector refuses any other hint). No transparency
// log or timestamp authority is involved: the node key is the trust root. Prints one JSON line;
// exit 0 when it verifies, 1 when it does not, 2 on bad usage.
const fs = require('fs');
const crypto = require('crypto');
const { bundleFromJSON } = require('@sigstore/bundle');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');

const V03 = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const INTOTO = 'application/vnd.in-toto+json';
const STATEMENT_V1 = 'https://in-toto.io/Statement/v1';
// DER SubjectPublicKeyInfo prefix of an Ed25519 key (RFC 8410), followed by the 32 raw bytes.
const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

function refuse(reason) {
  console.log(JSON.stringify({ verified: false, reason }));
  process.exit(1);
}

const [file, keyHex] = process.argv.slice(2);
if (!file || !/^[0-9a-f]{64}$/.test(keyHex || '')) {
  console.error('usage: node verify.cjs BUNDLE.json PUBLIC_KEY_HEX');
  process.exit(2);
}

let bundle;
try {
  bundle = bundleFromJSON(JSON.parse(fs.readFileSync(file, 'utf8')));
} catch (e) {
  refuse('bundle: ' + e.message);
}
if (bundle.mediaType !== V03) refuse('bundle: mediaType ' + bundle.mediaType);
if (bundle.content.$case !== 'dsseEnvelope') refuse('bundle: no DSSE envelope');

const nodeKey = crypto.createPublicKey({
  key: Buffer.concat([ED25519_SPKI, Buffer.from(keyHex, 'hex')]),
  format: 'der',
  type: 'spki',
});
const noAuthorities = { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] };
const trust = toTrustMaterial(noAuthorities, (hint) => {
  if (hint !== keyHex) throw new Error('key hint ' + hint + ' is not the node key');
  return { publicKey: nodeKey, validFor: () => true };
});
const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
try {
  verifier.verify(toSignedEntity(bundle));
} catch (e) {
  refuse('signature: ' + (e.code ? e.code + ': ' : '') + e.message);
}

const env = bundle.content.dsseEnvelope;
if (env.payloadType !== INTOTO) refuse('payloadType ' + env.payloadType);
let statement;
try {
  statement = JSON.parse(env.payload.toString('utf8'));
} catch (e) {
  refuse('payload: ' + e.message);
}
if (statement._type !== STATEMENT_V1) refuse('statement _type ' + statement._type);
if (!Array.isArray(statement.subject) || statement.subject.length === 0) refuse('no subject');
// A durable run's predicate may carry its segment chain and JCP records (WIRE.md 2.15): the
// amendments it carries must be, in order, those the signed attestation names. (Whether each is
// issuer-signed and only tightens is checked beside the chain by `sandboxctl verify FILE`.)
const predicate = statement.predicate || {};
let amendments = [];
if (predicate.jcp !== undefined) {
  if (!Array.isArray(predicate.jcp)) refuse('predicate.jcp: expected an array');
  if (!Array.isArray(predicate.segments) || predicate.segments.length === 0) {
    refuse('predicate.jcp: JCP records without the run\'s segments');
  }
  amendments = predicate.jcp
    .filter((e) => e && e.core && e.core.schema === 'jcp.amendment/1')
    .map((e) => e.address);
}
const attested =
  (predicate.attestation && predicate.attestation.core && predicate.attestation.core.jcp &&
    predicate.attestation.core.jcp.amendments) || [];
if (JSON.stringify(attested) !== JSON.stringify(amendments)) {
  refuse('predicate.jcp: amendments ' + JSON.stringify(amendments) + ', the attestation names ' +
    JSON.stringify(attested));
}
console.log(
  JSON.stringify({
    verified: true,
    predicateType: statement.predicateType,
    subject: statement.subject,
    runId: statement.predicate && statement.predicate.run_id,
    amendments,
  }),
);
