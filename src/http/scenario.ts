import type { Request } from 'express';
import type { SimulatedFailure } from '../shared/caller.ts';
import type { AuthContext } from './auth-context.ts';
import { ApiError } from './errors.ts';

const SIMULATED_FAILURES: readonly SimulatedFailure[] = ['conflict', 'not_found', 'no_data', 'recipient_failed'];

export type TestScenario = 'success' | 'validation_error' | 'server_error' | 'provider_review' | SimulatedFailure;

const KNOWN: readonly TestScenario[] = ['success', 'validation_error', 'server_error', 'provider_review', ...SIMULATED_FAILURES];

/**
 * The sandbox test scenario a request asked for. Live keys never get one; values are
 * case-insensitive and an unknown value behaves as `success` (openapi.yaml, "Test scenarios").
 */
export function scenarioOf(req: Request, auth: AuthContext | undefined): TestScenario {
  if (!auth || auth.mode !== 'test') return 'success';
  const raw = req.headers['x-test-scenario'];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim().toLowerCase();
  return (KNOWN as readonly string[]).includes(value ?? '') ? (value as TestScenario) : 'success';
}

/**
 * The scenarios the sandbox's use cases answer themselves, as the live call would fail on a record
 * in that state (each knows its own record's words); an operation they do not apply to ignores them.
 */
export function simulatedFailureOf(scenario: TestScenario): SimulatedFailure | undefined {
  return (SIMULATED_FAILURES as readonly string[]).includes(scenario) ? (scenario as SimulatedFailure) : undefined;
}

/**
 * The scenarios that replace the whole answer. Called once per request, after every validation
 * (schema and the operation's own rules) and before the operation runs, so a malformed request
 * still gets its own validation error. `provider_review` and the simulated failures are left to
 * the operations they change.
 */
export function throwScenarioError(scenario: TestScenario): void {
  if (scenario === 'validation_error') {
    throw new ApiError('invalid_parameter', 'Simulated validation error (X-Test-Scenario: validation_error)', {
      scenario: 'validation_error',
    });
  }
  if (scenario === 'server_error') {
    throw new ApiError('server_error', 'Simulated server error (X-Test-Scenario: server_error)', {
      scenario: 'server_error',
    });
  }
}
