// Package netsim runs the packet-level network side of NEURON-Fabric's
// control-path check: an ns-3 simulation (the C++ program ns3/
// nfabric-telemetry.cc, built against Debian's libns3-dev) of a training
// job's gradient traffic on a star or leaf-spine network shared with
// background flows, turned into the telemetry trace the Commander reads
// (control.ReadTelemetry's CSV). The paper says "NS-3 supplies telemetry
// replay for the control-path check"; this is that replay, from our own
// simulation of the workload the paper's setting implies.
//
// # What runs
//
// W GPU hosts, each on its own link to one switch (star) or to a leaf of a
// two-tier leaf-spine (every leaf linked to every spine; global routing, one
// path per destination). Every link direction has a drop-tail device queue
// of QueuePackets packets and no queue discs. The gradient traffic is a
// ring All-Reduce of every bucket of a workload.Trace, run in bucket order
// (one collective at a time, as on one NCCL stream) over one TCP connection
// from each host to its ring successor: step k of a bucket goes once step
// k-1 has arrived from the predecessor. A bucket's All-Reduce is released at
// the time the FP32 reference schedule gives (Schedule): step s starts at
// s*T, its bucket b is released at s*T + forward + ready_b, where T is the
// FP32 reference step period, forward + max(backward, the finish of the last
// bucket when each bucket's All-Reduce takes collective's alpha-beta ring
// time on the host link, in bucket order). The release times are open loop:
// a congested network does not slow the job's compute, so backlog builds up
// as it would behind a fixed step cadence. Background flows are bulk TCP
// (BulkSend, unlimited) or UDP on/off (exponential on and off times) from
// host f mod W to the host half a ring away.
//
// # Scale
//
// A GPT-2 XL step moves about 11 GB per host; simulating that packet by
// packet is hours of ns-3. Scale s divides every bucket and every link rate
// by s, which keeps every time, utilization and pressure (ratios of bytes to
// rate) while cutting the packet count by s. What it does not keep:
// per-packet costs become s times longer relative to the chunks (a ring
// step's chunk is S/(W s) bytes), so store-and-forward and TCP's
// per-segment dynamics weigh more (a GPT-2 XL bucket's ring takes about
// twice its alpha-beta time at s = 1000); and queues stay QueuePackets
// packets, so a full queue takes s times longer to drain. Behind bulk TCP
// background, whose flows keep queues full, the ring's latency-bound steps
// therefore wait far longer than they would unscaled: treat congested runs
// at scale as qualitative (congested or not), not as step times.
// Telemetry is reported in unscaled GB/s.
//
// # Telemetry mapping
//
// ns-3 reports, per sampling interval of length D and link direction l, the
// time the link spent transmitting gradient packets (busy_grad) and
// background packets (busy_bg), from the device's PhyTxBegin trace with
// each transmission spread over the intervals it overlaps, so u_grad + u_bg
// <= 1 by construction; the queue's BytesInQueue at the sample and its
// maximum in the interval; dropped bytes; and, per host h, the gradient
// bytes its ring successor has received from it. One telemetry sample per
// interval comes from the host whose ring hop is the most pressed:
//
//	owed_h(t)  = sum over buckets released before t of the bytes h sends
//	             for them (RingSendBytes: 2(W-1) chunks of S/W)
//	need_h     = owed_h(end) - delivered_h(start)   backlog + new release
//	demand     = min(need_h / D, min_l rate_l)       gradient load offered
//	                                                 in the interval
//	capacity   = min over the hop's links of rate_l (1 - u_bg,l)
//	             (uplink of h, downlink of h+1, on a leaf-spine the
//	             leaf-spine pair with the most capacity left)
//	pressure   = demand / capacity                   max over hosts
//	line reads = demand / 64 B                       as the synthetic generator
//
// Demand is the gradient load the job offers the hop in the interval, not
// what TCP carried: a flow starved by background (or stalled in a
// retransmission timeout) keeps its backlog and keeps offering it, so its
// pressure rises above 1 instead of reading as an idle link. It is a rate,
// not a backlog: a sender cannot offer more than the hop's line rate in
// one interval, so demand is capped there (a 50 GB/s hop with a backlog of
// many intervals offers 50 GB/s, and pressure is then rate / capacity, the
// factor by which background squeezes it). The links file (WriteLoads)
// puts beside it, per link, the gradient and background traffic carried
// (grad_gbps = rate u_grad, bg_gbps = rate u_bg) and, on the bottleneck
// link's row, the sample's demand_gbps and capacity_gbps, so what was
// offered, what background left and what got through read side by side. Gradient
// packets are those of the ring connections (port 5000, data and ACKs);
// everything else is background. Queue occupancy is not folded into
// pressure (a standing TCP queue's size is set by the buffer, not by the
// offered load); it is reported per link for the figure (WriteLoads,
// FigureSeries). Without background a healthy job's pressure follows its
// release bursts during backward and falls to 0 in forward; the
// Commander's smoothing (CommanderConfig.Smooth) averages that, and Judge
// replays a trace through control.Plane's own Commander to say whether it
// would grant relief.
//
// # Determinism
//
// The program's outputs are integers and ns-3's random streams are seeded
// from Config.Seed, so the same inputs give the same CSV bytes.
package netsim
