// GET /livez (the process answers), GET /readyz (readiness.h: 200 or 503 with the reason, the rung, its standing
// fallbacks and the last probe), GET /metrics (Prometheus text).
#include "core/metrics.h"
#include "server/server_metrics.h"
#include "server/service.h"

namespace steadyocr::server {

void add_health_routes(httplib::Server& http, OcrService& s) {
  http.Get("/livez", [&s](const httplib::Request&, httplib::Response& res) {
    current_request().route = "/livez";
    s.reply_json(res, 200, {{"live", true}});
  });
  http.Get("/readyz", [&s](const httplib::Request&, httplib::Response& res) {
    RequestContext& ctx = current_request();
    ctx.route = "/readyz";
    Readiness::Report r = s.readiness().report();
    if (auto* a = s.admission()) {
      r.body["queue_depth"] = a->queue_depth();
      r.body["in_flight"] = a->in_flight();
    }
    if (!r.ready) {
      ctx.outcome = r.reason;
      res.set_header("Retry-After", "1");
    }
    s.reply_json(res, r.ready ? 200 : 503, r.body);
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    current_request().route = "/metrics";
    LiveFigures live;
    if (auto* a = s.admission()) {
      const Admission::Snapshot now = a->snapshot();
      live.queue_depth = now.queue_depth;
      live.in_flight = now.in_flight;
      live.memory_in_flight = now.memory_in_flight;
      live.memory_peak = now.memory_peak;
    }
    live.http_active = s.http_active().load();
    live.ready = s.readiness().ready();
    live.draining = s.draining();
    refresh_live_metrics(s.engine().get(), live);
    res.status = 200;
    res.set_content(metrics::prometheus_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

}  // namespace steadyocr::server
