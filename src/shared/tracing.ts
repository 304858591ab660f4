/**
 * OpenTelemetry tracing, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set. Every layer spans its own
 * work through these few functions (hence src/shared); the SDK (tracing-sdk.ts) is imported only
 * once tracing is on, so a process without the variable loads no OpenTelemetry module at all.
 */
import type { Telemetry } from 'bullmq';
import type { SpanAttributes, TracingSdk, WorkSpan } from './tracing-sdk.ts';

const NO_SPAN: WorkSpan = { set() {}, rename() {}, fail() {} };

let sdk: TracingSdk | undefined;

/** Starts tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set (`service`: the process's role); safe twice. */
export async function startTracing(service: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (!sdk && env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()) {
    const { startTracingSdk } = await import('./tracing-sdk.ts');
    sdk = startTracingSdk(service, env);
  }
  return sdk !== undefined;
}

export const tracingOn = (): boolean => sdk !== undefined;

/** Exports the spans ended so far (at shutdown, and in tests). */
export async function flushTracing(): Promise<void> {
  await sdk?.flush();
}

/** BullMQ's telemetry for every Queue and Worker: the producer's trace travels in the job. */
export function jobTelemetry(): Telemetry | undefined {
  return sdk?.jobTelemetry;
}

/**
 * Runs `work` in a span of its own (a child of the active one), ended when `work` settles. A
 * `server` span starts a trace: a request never joins a trace its client names.
 */
export function traced<T>(name: string, kind: 'server' | 'client' | 'internal', attributes: SpanAttributes, work: (span: WorkSpan) => Promise<T>): Promise<T> {
  return sdk ? sdk.traced(name, kind, attributes, work) : work(NO_SPAN);
}
