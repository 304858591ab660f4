/**
 * The OpenTelemetry SDK, imported by tracing.ts only when tracing is on. @opentelemetry/sdk-node
 * reads the OTEL_* variables (endpoint, `OTEL_EXPORTER_OTLP_PROTOCOL` http/protobuf or http/json,
 * headers, OTEL_SERVICE_NAME); Prisma's spans come from @prisma/instrumentation, BullMQ's from
 * bullmq-otel. No instrumentation patches a module, so it may start after they are imported.
 */
import { context, ProxyTracerProvider, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context } from '@opentelemetry/api';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import { PrismaInstrumentation } from '@prisma/instrumentation';
import type { Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** What a piece of work may say of itself on its span (with tracing off, tracing.ts hands a no-op one). */
export interface WorkSpan {
  set(attributes: SpanAttributes): void;
  rename(name: string): void;
  /** Marks the span failed (an exception or a 5xx). */
  fail(error?: unknown): void;
}

export interface TracingSdk {
  jobTelemetry: Telemetry;
  traced<T>(name: string, kind: 'server' | 'client' | 'internal', attributes: SpanAttributes, work: (span: WorkSpan) => Promise<T>): Promise<T>;
  flush(): Promise<void>;
}

const TRACER = 'client-api-v1';
const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

/**
 * A trace starts only at a request (SERVER), a job queued outside one (PRODUCER: a reconciler's or
 * the webhook dispatcher's) or a job queued untraced (CONSUMER); everything else joins its parent's
 * decision. So the timers' database polls and BullMQ's idle fetches make no traces of their own.
 */
const traceRoots: tracing.Sampler = {
  shouldSample: (_context, _traceId, _name, kind) => ({
    decision: kind === SpanKind.SERVER || kind === SpanKind.PRODUCER || kind === SpanKind.CONSUMER ? tracing.SamplingDecision.RECORD_AND_SAMPLED : tracing.SamplingDecision.NOT_RECORD,
  }),
  toString: () => 'ClientApiTraceRoots',
};

function attributesOf(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

export function startTracingSdk(service: string, env: NodeJS.ProcessEnv): TracingSdk {
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: `client-api-v1-${service}` }),
    // OTEL_TRACES_SAMPLER, when set, is the operator's choice.
    ...(env.OTEL_TRACES_SAMPLER ? {} : { sampler: new tracing.ParentBasedSampler({ root: traceRoots }) }),
    instrumentations: [new PrismaInstrumentation()],
  });
  sdk.start();
  const tracer = trace.getTracer(TRACER);
  return {
    jobTelemetry: new BullMQOtel({ tracerName: 'bullmq' }),
    traced(name, kind, attributes, work) {
      const parent: Context = kind === 'server' ? ROOT_CONTEXT : context.active();
      const span = tracer.startSpan(name, { kind: KINDS[kind], attributes: attributesOf(attributes) }, parent);
      const handle: WorkSpan = {
        set: (more) => span.setAttributes(attributesOf(more)),
        rename: (newName) => span.updateName(newName),
        fail: (error) => {
          if (error instanceof Error) span.recordException(error);
          span.setStatus({ code: SpanStatusCode.ERROR, ...(error instanceof Error ? { message: error.message } : {}) });
        },
      };
      return context.with(trace.setSpan(parent, span), async () => {
        try {
          return await work(handle);
        } catch (err) {
          handle.fail(err);
          throw err;
        } finally {
          span.end();
        }
      });
    },
    async flush() {
      const provider = trace.getTracerProvider();
      const registered = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
      await (registered as { forceFlush?: () => Promise<void> }).forceFlush?.();
    },
  };
}
