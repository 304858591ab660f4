import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Express } from 'express';
import compression from 'compression';
import helmet from 'helmet';
import type { Contract } from './contract.ts';
import { ROOT_DIR } from '../root.ts';

export const DOCS_FILE = path.join(ROOT_DIR, 'docs', 'index.html');

/** The published reference (Redoc) and the contract itself, outside /api and without a key. */
export function registerDocs(app: Express, contract: Contract): void {
  const json = JSON.stringify(contract.document, null, 2);
  // The reference is megabytes of HTML and the contract hundreds of kilobytes: compressed for
  // clients that accept it (gzip, deflate, br). The /api answers are small and stay as they are.
  const compressed = compression({ filter: () => true }); // all three are text; YAML is not on compressible's list
  app.get('/openapi.yaml', compressed, (_req, res) => {
    res.type('application/yaml; charset=utf-8').send(contract.yaml);
  });
  app.get('/openapi.json', compressed, (_req, res) => {
    res.type('application/json; charset=utf-8').send(json);
  });
  // The one HTML page: helmet's full default set, with a CSP that lets Redoc's bundle run its
  // inline scripts and its web workers from blob: URLs.
  const htmlHeaders = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'", "'unsafe-inline'", 'blob:'],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        workerSrc: ['blob:'],
        fontSrc: ["'self'", 'data:'],
        frameAncestors: ["'none'"],
      },
    },
    xFrameOptions: { action: 'deny' },
    xPoweredBy: false,
  });
  app.get('/docs', compressed, htmlHeaders, (_req, res, next) => {
    if (!existsSync(DOCS_FILE)) {
      next(new Error('docs/index.html is missing: run npm run docs'));
      return;
    }
    res.sendFile(DOCS_FILE);
  });
}
