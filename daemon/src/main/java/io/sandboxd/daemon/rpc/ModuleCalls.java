package io.sandboxd.daemon.rpc;

import io.sandboxd.daemon.run.Admission;
import io.sandboxd.daemon.run.Caller;
import io.sandboxd.daemon.run.OfferedEnvironments;
import io.sandboxd.executor.FactoryCache;
import io.sandboxd.executor.ModuleStore;
import java.util.logging.Logger;

/** The modules the node holds by address, and the environments it offers to run them in. */
record ModuleCalls(ModuleStore modules, OfferedEnvironments offered) {
  private static final Logger LOG = Logger.getLogger(ModuleCalls.class.getName());

  PutModuleReply put(PutModuleRequest req) {
    ModuleStore.Put p =
        modules.put(req.getModule().toByteArray(), Admission.compileShareOf(Caller.current()));
    if (!p.alreadyHeld()) {
      LOG.info(() -> "module b3:" + p.address() + " stored (" + p.bytes() + " bytes)");
    }
    return PutModuleReply.newBuilder()
        .setAddress(p.address())
        .setBytes(p.bytes())
        .setAlreadyHeld(p.alreadyHeld())
        .build();
  }

  ListModulesReply list() {
    FactoryCache factories = modules.compiler().factories();
    ListModulesReply.Builder b = ListModulesReply.newBuilder();
    for (ModuleStore.Held h : modules.list()) {
      b.addModules(
          ModuleInfo.newBuilder()
              .setAddress(h.address())
              .setBytes(h.bytes())
              .setStoredMs(h.storedMs())
              .setCompiled(factories.contains(h.address())));
    }
    FactoryCache.Stats s = factories.stats();
    return b.setFactoryCacheHits(s.hits())
        .setFactoryCacheMisses(s.misses())
        .setFactoryCacheEntries(s.entries())
        .setFactoryCacheCapacity(s.capacity())
        .build();
  }

  ListEnvironmentsReply environments() {
    ListEnvironmentsReply.Builder b = ListEnvironmentsReply.newBuilder();
    for (OfferedEnvironments.Offer o : offered.list()) {
      b.addEnvironments(
          EnvironmentInfo.newBuilder()
              .setName(o.name())
              .setAddress(o.address())
              .setPinned(o.manifest().pinned())
              .setManifest(o.manifest().toJsonLine()));
    }
    return b.build();
  }
}
