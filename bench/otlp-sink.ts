/**
 * A local OTLP/HTTP receiver for the tracing bench (bench/README.md, "Tracing"): accepts every
 * export on 127.0.0.1:$OTLP_SINK_PORT (4318) and counts the spans' bytes, so the server pays the
 * whole cost of exporting and no collector's CPU is measured.
 *   npx tsx bench/otlp-sink.ts & OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 npm run bench
 */
import http from 'node:http';

const port = Number(process.env.OTLP_SINK_PORT ?? 4318);
let exports = 0;
let bytes = 0;
http
  .createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end();
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`otlp sink on http://127.0.0.1:${port}`));
process.on('SIGTERM', () => {
  console.log(`otlp sink: ${exports} exports, ${bytes} bytes`);
  process.exit(0);
});
