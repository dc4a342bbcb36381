package io.sandboxd.executor;

import io.sandboxd.enforcer.Grants;

/** One execution to perform: a compiled unit, its entry export and the grants in force. */
public record UnitRequest(String runId, CompiledUnit unit, String entry, Grants grants) {}
