package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.Set;

/** Where the host injects an egress credential: a request header or a query parameter (Q5). */
public sealed interface Injection permits Injection.Header, Injection.Query {

  /** {@code {"Header":{"name":..,"prefix":..}}}: sets header {@code name} to prefix + secret. */
  record Header(String name, String prefix) implements Injection {}

  /** {@code {"Query":{"param":..}}}: sets query parameter {@code param} to the secret. */
  record Query(String param) implements Injection {}

  static Injection parse(JsonNode node, String path) {
    if (node == null || !node.isObject() || node.size() != 1) {
      throw new GrantsException(path, "expected {\"Header\":{..}} or {\"Query\":{..}}");
    }
    String tag = node.fieldNames().next();
    String p = path + "." + tag;
    switch (tag) {
      case "Header":
        {
          JsonReader f =
              JsonReader.of(node.get(tag), p, Set.of("name", "prefix"), GrantsException.FAULT);
          String name = f.string("name");
          if (name.isEmpty() || !name.chars().allMatch(Injection::isTokenChar)) {
            throw new GrantsException(f.pathOf("name"), "not an HTTP header name");
          }
          String prefix = f.optional("prefix").isPresent() ? f.string("prefix") : "";
          return new Header(name, prefix);
        }
      case "Query":
        {
          JsonReader f = JsonReader.of(node.get(tag), p, Set.of("param"), GrantsException.FAULT);
          String param = f.string("param");
          if (param.isEmpty()) {
            throw new GrantsException(f.pathOf("param"), "empty query parameter name");
          }
          return new Query(param);
        }
      default:
        throw new GrantsException(p, "unknown injection (expected Header or Query)");
    }
  }

  private static boolean isTokenChar(int c) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
  }

  default ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    if (this instanceof Header h) {
      ObjectNode v = o.putObject("Header");
      v.put("name", h.name());
      v.put("prefix", h.prefix());
    } else if (this instanceof Query q) {
      o.putObject("Query").put("param", q.param());
    }
    return o;
  }
}
