// A Hookline receiver in Node.js (no dependencies): Standard Webhooks verification with node:crypto.
const crypto = require("node:crypto");
const http = require("node:http");

const secrets = process.env.HOOKLINE_SIGNING_SECRET.split(" "); // during a rotation: new and old
const toleranceS = 300;

function verified(headers, raw) {
  const id = headers["webhook-id"], timestamp = headers["webhook-timestamp"];
  const signatures = (headers["webhook-signature"] || "").split(" ");
  if (!id || !timestamp || Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceS) return false;
  return secrets.some((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
    const expected = crypto.createHmac("sha256", key).update(`${id}.${timestamp}.${raw}`).digest();
    return signatures.some((signature) => {
      const [version, value] = signature.split(",");
      const given = Buffer.from(value || "", "base64");
      return version === "v1" && given.length === expected.length && crypto.timingSafeEqual(given, expected);
    });
  });
}

http.createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const raw = Buffer.concat(chunks).toString("utf8"); // the exact bytes signed
    if (!verified(request.headers, raw)) return response.writeHead(401).end();
    console.log("verified", request.headers["webhook-id"], raw); // de-duplicate on webhook-id
    response.writeHead(204).end();
  });
}).listen(Number(process.env.PORT || 8000), "127.0.0.1");
