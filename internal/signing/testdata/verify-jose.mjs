// Verifies webhook tokens with the npm package jose, independently of the
// Go code that made them: signing_test.go (TestJoseVerifies) writes the
// input, runs `node verify-jose.mjs INPUT.json` and compares the outcomes.
//
// Input:  {"jwks": {...}, "issuer": "...", "now": unix seconds,
//          "cases": [{"name", "token", "audience", "body": base64}]}
// Output: {"thumbprints": [{"kid", "thumbprint"}],
//          "results": [{"name", "ok", "code", "message", "sub", "jti"}]}
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, createLocalJWKSet, jwtVerify } from 'jose';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const keys = createLocalJWKSet(input.jwks);

const thumbprints = [];
for (const jwk of input.jwks.keys) {
  thumbprints.push({ kid: jwk.kid, thumbprint: await calculateJwkThumbprint(jwk, 'sha256') });
}

const results = [];
for (const c of input.cases) {
  try {
    const { payload } = await jwtVerify(c.token, keys, {
      algorithms: ['ES256'],
      typ: 'JWT',
      issuer: input.issuer,
      audience: c.audience,
      currentDate: new Date(input.now * 1000),
      maxTokenAge: 300,
      requiredClaims: ['iss', 'aud', 'sub', 'jti', 'iat', 'exp', 'body_sha256'],
    });
    if (typeof payload.aud !== 'string') {
      throw Object.assign(new Error('aud is not a single string'), { code: 'AUD_NOT_STRING' });
    }
    const sum = createHash('sha256').update(Buffer.from(c.body ?? '', 'base64')).digest('base64url');
    if (payload.body_sha256 !== sum) {
      throw Object.assign(new Error('body_sha256 does not match the body'), { code: 'BODY_MISMATCH' });
    }
    results.push({ name: c.name, ok: true, sub: payload.sub, jti: payload.jti });
  } catch (e) {
    results.push({ name: c.name, ok: false, code: e.code ?? 'ERROR', message: String(e.message) });
  }
}
process.stdout.write(JSON.stringify({ thumbprints, results }));
