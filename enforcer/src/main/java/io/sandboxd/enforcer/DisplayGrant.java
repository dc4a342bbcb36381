package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.Set;

/** Framebuffer access: the switch, VNC export, and the per-dimension surface bound in pixels. */
public record DisplayGrant(boolean enabled, boolean vnc, long maxWidth, long maxHeight) {

  private static final Set<String> FIELDS = Set.of("enabled", "vnc", "max_width", "max_height");

  public DisplayGrant {
    if (maxWidth < 0
        || maxWidth > JsonReader.MAX_U32
        || maxHeight < 0
        || maxHeight > JsonReader.MAX_U32) {
      throw new IllegalArgumentException("max_width and max_height are u32");
    }
  }

  static DisplayGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    return new DisplayGrant(
        f.bool("enabled", false),
        f.bool("vnc", false),
        f.u32("max_width", 0),
        f.u32("max_height", 0));
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("enabled", enabled);
    o.put("vnc", vnc);
    o.put("max_width", maxWidth);
    o.put("max_height", maxHeight);
    return o;
  }
}
