// nfabric-telemetry: a packet-level ns-3 simulation of a data-parallel
// training job's gradient traffic (a ring All-Reduce of every bucket, released
// at the times a schedule file gives) sharing a star or leaf-spine network
// with background flows. It samples every link direction's busy time
// (gradient and background), queue occupancy and drops at a fixed interval.
//
// The Go package github.com/neuronfabric/nfabric/netsim writes the schedule,
// runs this program and turns its output into control telemetry. Build (the
// one line the Go driver and .ci/run use):
//
//   g++ -O2 -std=c++17 -o nfabric-telemetry nfabric-telemetry.cc \
//     $(pkg-config --cflags --libs ns3-core ns3-network ns3-internet \
//       ns3-point-to-point ns3-applications ns3-traffic-control)
//
// Inputs (flags): --schedule (CSV "step,bucket,release_ns,bytes": every worker
// All-Reduces `bytes` bytes for that bucket, released at release_ns), the
// topology (--workers, --topology star|leafspine, --leaves, --spines), links
// (--hostRate, --fabricRate in bit/s, --delayNs), buffers (--queuePackets per
// device queue; no queue discs), background (--bulk N bulk TCP flows;
// --onoff N UDP on/off flows at --onoffShare of the host rate, exponential
// on/off times of mean --onNs/--offNs), --intervalNs, --durationNs, --seed.
// Outputs: --links (per interval and link direction), --buckets (per bucket),
// --totals (per link direction over the run), --hosts (per interval and host:
// the gradient bytes it has delivered to its ring successor so far). All numbers are integers, so
// the same inputs and seed give the same bytes.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

const uint16_t kRingPort = 5000;  // gradient traffic: ring connections
const uint16_t kBulkPort = 6000;  // background bulk TCP, 6000 + flow
const uint16_t kOnOffPort = 7000; // background UDP on/off, 7000 + flow

struct BucketSpec
{
    int step;
    int bucket;
    int64_t releaseNs;
    uint64_t bytes;
};

// LinkStat is one device (one direction of a point-to-point link).
struct LinkStat
{
    std::string name;
    uint64_t bps;
    std::vector<int64_t> busyGrad, busyBg; // ns per interval
    std::vector<uint32_t> qNow, qMax;       // bytes
    std::vector<uint64_t> drops;            // bytes per interval
    uint32_t qCur = 0;
    uint64_t gradPayload = 0, bgPayload = 0, gradWire = 0, bgWire = 0, dropBytes = 0;
};

std::vector<LinkStat> g_links;
// g_recvTotal[h] is the gradient bytes host h's ring node has received from
// its predecessor; g_delivered[k][h] the bytes host h had delivered to its
// successor by the end of interval k.
std::vector<uint64_t> g_recvTotal;
std::vector<std::vector<uint64_t>> g_delivered;
int64_t g_intervalNs = 1000000;
size_t g_intervals = 0;

size_t
IntervalOf(int64_t ns)
{
    size_t k = static_cast<size_t>(ns / g_intervalNs);
    return k < g_intervals ? k : g_intervals; // g_intervals: past the end
}

// Classify returns true for gradient traffic and the transport payload size.
bool
Classify(Ptr<const Packet> p, bool hasPpp, uint32_t* payload)
{
    Ptr<Packet> c = p->Copy();
    if (hasPpp)
    {
        PppHeader ppp;
        c->RemoveHeader(ppp);
    }
    Ipv4Header ip;
    c->RemoveHeader(ip);
    uint16_t sp = 0, dp = 0;
    if (ip.GetProtocol() == 6)
    {
        TcpHeader tcp;
        c->RemoveHeader(tcp);
        sp = tcp.GetSourcePort();
        dp = tcp.GetDestinationPort();
    }
    else if (ip.GetProtocol() == 17)
    {
        UdpHeader udp;
        c->RemoveHeader(udp);
        sp = udp.GetSourcePort();
        dp = udp.GetDestinationPort();
    }
    *payload = c->GetSize();
    return sp == kRingPort || dp == kRingPort;
}

void
OnPhyTxBegin(size_t li, Ptr<const Packet> p)
{
    LinkStat& l = g_links[li];
    uint32_t payload = 0;
    bool grad = Classify(p, true, &payload);
    int64_t start = Simulator::Now().GetNanoSeconds();
    int64_t dur = DataRate(l.bps).CalculateBytesTxTime(p->GetSize()).GetNanoSeconds();
    std::vector<int64_t>& busy = grad ? l.busyGrad : l.busyBg;
    if (grad)
    {
        l.gradPayload += payload;
        l.gradWire += p->GetSize();
    }
    else
    {
        l.bgPayload += payload;
        l.bgWire += p->GetSize();
    }
    // Spread the transmission over the intervals it overlaps, so an
    // interval's busy time never exceeds its length.
    int64_t t = start, end = start + dur;
    while (t < end)
    {
        size_t k = IntervalOf(t);
        if (k >= g_intervals)
        {
            break;
        }
        int64_t bound = static_cast<int64_t>(k + 1) * g_intervalNs;
        int64_t seg = std::min(end, bound) - t;
        busy[k] += seg;
        t += seg;
    }
}

void
OnBytesInQueue(size_t li, uint32_t, uint32_t now)
{
    LinkStat& l = g_links[li];
    l.qCur = now;
    size_t k = IntervalOf(Simulator::Now().GetNanoSeconds());
    if (k < g_intervals && now > l.qMax[k])
    {
        l.qMax[k] = now;
    }
}

void
OnDrop(size_t li, Ptr<const Packet> p)
{
    LinkStat& l = g_links[li];
    l.dropBytes += p->GetSize();
    size_t k = IntervalOf(Simulator::Now().GetNanoSeconds());
    if (k < g_intervals)
    {
        l.drops[k] += p->GetSize();
    }
}

void
SampleQueues(size_t k)
{
    for (LinkStat& l : g_links)
    {
        l.qNow[k] = l.qCur;
    }
    const size_t w = g_recvTotal.size();
    for (size_t h = 0; h < w; h++)
    {
        g_delivered[k][h] = g_recvTotal[(h + 1) % w];
    }
    if (k + 1 < g_intervals)
    {
        Simulator::Schedule(NanoSeconds(g_intervalNs), &SampleQueues, k + 1);
    }
}

// Collective state shared by the ring nodes.
struct BucketState
{
    BucketSpec spec;
    int64_t finishNs = -1; // when the last node finished
    int done = 0;          // nodes finished
    uint64_t sent = 0, recvd = 0;
};

std::vector<BucketState> g_buckets;
int g_workers = 0;

// ChunkBytes is the size of chunk j of an S-byte buffer cut into W chunks.
uint64_t
ChunkBytes(uint64_t S, int W, int j)
{
    return S / W + (static_cast<uint64_t>(j) < S % W ? 1 : 0);
}

int
Mod(int a, int w)
{
    return ((a % w) + w) % w;
}

// StepChunk is the chunk node i sends at ring step k (0 <= k < 2(W-1)):
// reduce-scatter sends chunk i-k, all-gather sends chunk i+1-(k-(W-1)).
int
StepChunk(int i, int k, int W)
{
    if (k < W - 1)
    {
        return Mod(i - k, W);
    }
    return Mod(i + 1 - (k - (W - 1)), W);
}

// RingNode runs the ring All-Reduce of every bucket in order over one TCP
// connection to its successor; step k of a bucket may be sent once step k-1
// has been received from the predecessor (step 0 once the bucket is
// released and the previous bucket is finished here).
class RingNode : public Application
{
  public:
    int m_index = 0;
    Address m_peer;
    Ptr<Socket> m_send, m_listen;
    uint64_t m_pendingWrite = 0; // bytes queued for the send socket
    size_t m_bucket = 0;         // current bucket
    int m_sendStep = 0;          // next step to send in the current bucket
    int m_recvStep = 0;          // steps received in the current bucket
    uint64_t m_recvBuf = 0;      // bytes received beyond completed steps
    bool m_released = false;

    void StartApplication() override
    {
        m_listen = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
        m_listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), kRingPort));
        m_listen->Listen();
        m_listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                    MakeCallback(&RingNode::Accept, this));
        m_send = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
        m_send->Bind();
        m_send->Connect(m_peer);
        m_send->SetSendCallback(MakeCallback(&RingNode::Writable, this));
        ScheduleRelease();
    }

    void StopApplication() override
    {
    }

    void Accept(Ptr<Socket> s, const Address&)
    {
        s->SetRecvCallback(MakeCallback(&RingNode::Recv, this));
    }

    void ScheduleRelease()
    {
        if (m_bucket >= g_buckets.size())
        {
            return;
        }
        int64_t rel = g_buckets[m_bucket].spec.releaseNs;
        int64_t now = Simulator::Now().GetNanoSeconds();
        m_released = false;
        Simulator::Schedule(NanoSeconds(rel > now ? rel - now : 0), &RingNode::Release, this);
    }

    void Release()
    {
        m_released = true;
        Advance();
    }

    uint64_t StepBytes(int node, int k)
    {
        return ChunkBytes(g_buckets[m_bucket].spec.bytes, g_workers, StepChunk(node, k, g_workers));
    }

    // Advance sends every step that may go and moves to the next bucket when
    // this node has sent and received all steps of the current one.
    void Advance()
    {
        const int steps = 2 * (g_workers - 1);
        while (m_bucket < g_buckets.size() && m_released)
        {
            BucketState& b = g_buckets[m_bucket];
            // Consume received steps.
            while (m_recvStep < steps && m_recvBuf >= StepBytes(Mod(m_index - 1, g_workers), m_recvStep))
            {
                uint64_t n = StepBytes(Mod(m_index - 1, g_workers), m_recvStep);
                m_recvBuf -= n;
                b.recvd += n;
                m_recvStep++;
            }
            while (m_sendStep < steps && m_sendStep <= m_recvStep)
            {
                uint64_t n = StepBytes(m_index, m_sendStep);
                m_pendingWrite += n;
                b.sent += n;
                m_sendStep++;
            }
            Writable(m_send, 0);
            if (m_recvStep < steps || m_sendStep < steps)
            {
                return;
            }
            b.done++;
            if (b.done == g_workers)
            {
                b.finishNs = Simulator::Now().GetNanoSeconds();
            }
            m_bucket++;
            m_sendStep = m_recvStep = 0;
            ScheduleRelease();
            return; // Release calls Advance again.
        }
    }

    void Writable(Ptr<Socket> s, uint32_t)
    {
        while (m_pendingWrite > 0)
        {
            uint32_t room = s->GetTxAvailable();
            if (room == 0)
            {
                return;
            }
            uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(room, m_pendingWrite));
            int sent = s->Send(Create<Packet>(n));
            if (sent <= 0)
            {
                return;
            }
            m_pendingWrite -= static_cast<uint64_t>(sent);
        }
    }

    void Recv(Ptr<Socket> s)
    {
        Ptr<Packet> p;
        while ((p = s->Recv()))
        {
            m_recvBuf += p->GetSize();
            g_recvTotal[m_index] += p->GetSize();
        }
        Advance();
    }
};

bool
ReadSchedule(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        std::fprintf(stderr, "nfabric-telemetry: cannot open schedule %s\n", path.c_str());
        return false;
    }
    std::string line;
    int n = 0;
    while (std::getline(in, line))
    {
        n++;
        if (line.empty() || line[0] == '#' || line.rfind("step,", 0) == 0)
        {
            continue;
        }
        BucketState b;
        long long rel;
        unsigned long long bytes;
        if (std::sscanf(line.c_str(), "%d,%d,%lld,%llu", &b.spec.step, &b.spec.bucket, &rel, &bytes) != 4 || rel < 0 ||
            bytes == 0)
        {
            std::fprintf(stderr, "nfabric-telemetry: schedule %s line %d: want step,bucket,release_ns,bytes\n",
                         path.c_str(), n);
            return false;
        }
        if (!g_buckets.empty() && rel < g_buckets.back().spec.releaseNs)
        {
            std::fprintf(stderr, "nfabric-telemetry: schedule %s line %d: release goes back in time\n", path.c_str(), n);
            return false;
        }
        b.spec.releaseNs = rel;
        b.spec.bytes = bytes;
        g_buckets.push_back(b);
    }
    return true;
}

// Connect adds a point-to-point link between a and b and registers both
// directions for sampling.
Ipv4InterfaceContainer
Connect(Ptr<Node> a, Ptr<Node> b, const std::string& an, const std::string& bn, uint64_t bps, int64_t delayNs,
        uint32_t queuePackets, Ipv4AddressHelper& addr)
{
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(bps)));
    p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(delayNs)));
    std::ostringstream q;
    q << queuePackets << "p";
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", QueueSizeValue(QueueSize(q.str())));
    NetDeviceContainer d = p2p.Install(a, b);
    Ipv4InterfaceContainer ifs = addr.Assign(d);
    addr.NewNetwork();
    TrafficControlHelper tch;
    tch.Uninstall(d);
    const std::string names[2] = {an + ">" + bn, bn + ">" + an};
    for (int i = 0; i < 2; i++)
    {
        size_t li = g_links.size();
        LinkStat l;
        l.name = names[i];
        l.bps = bps;
        l.busyGrad.assign(g_intervals, 0);
        l.busyBg.assign(g_intervals, 0);
        l.qNow.assign(g_intervals, 0);
        l.qMax.assign(g_intervals, 0);
        l.drops.assign(g_intervals, 0);
        g_links.push_back(l);
        Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(d.Get(i));
        dev->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&OnPhyTxBegin, li));
        dev->GetQueue()->TraceConnectWithoutContext("BytesInQueue", MakeBoundCallback(&OnBytesInQueue, li));
        dev->GetQueue()->TraceConnectWithoutContext("Drop", MakeBoundCallback(&OnDrop, li));
    }
    return ifs;
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string schedule, topology = "star", linksOut, bucketsOut, totalsOut, hostsOut;
    int workers = 8, leaves = 2, spines = 2, bulk = 0, onoff = 0;
    uint64_t hostRate = 10000000000ULL, fabricRate = 0;
    int64_t delayNs = 1000, intervalNs = 1000000, durationNs = 100000000, onNs = 5000000, offNs = 5000000;
    uint32_t queuePackets = 100, segment = 1448;
    double onoffShare = 0.5;
    uint32_t seed = 1;
    CommandLine cmd;
    cmd.AddValue("schedule", "bucket schedule CSV (step,bucket,release_ns,bytes)", schedule);
    cmd.AddValue("workers", "GPU nodes W", workers);
    cmd.AddValue("topology", "star or leafspine", topology);
    cmd.AddValue("leaves", "leaf switches (leafspine)", leaves);
    cmd.AddValue("spines", "spine switches (leafspine)", spines);
    cmd.AddValue("hostRate", "host link rate, bit/s", hostRate);
    cmd.AddValue("fabricRate", "leaf-spine link rate, bit/s (0: host rate)", fabricRate);
    cmd.AddValue("delayNs", "propagation delay per link, ns", delayNs);
    cmd.AddValue("queuePackets", "device queue size, packets", queuePackets);
    cmd.AddValue("segment", "TCP segment size, bytes", segment);
    cmd.AddValue("bulk", "background bulk TCP flows", bulk);
    cmd.AddValue("onoff", "background UDP on/off flows", onoff);
    cmd.AddValue("onoffShare", "on/off sending rate as a share of the host rate", onoffShare);
    cmd.AddValue("onNs", "mean on time, ns", onNs);
    cmd.AddValue("offNs", "mean off time, ns", offNs);
    cmd.AddValue("intervalNs", "sampling interval, ns", intervalNs);
    cmd.AddValue("durationNs", "simulated time, ns", durationNs);
    cmd.AddValue("seed", "random seed (>= 1)", seed);
    cmd.AddValue("links", "output: per-interval link samples CSV", linksOut);
    cmd.AddValue("buckets", "output: per-bucket CSV", bucketsOut);
    cmd.AddValue("totals", "output: per-link totals CSV", totalsOut);
    cmd.AddValue("hosts", "output: per-interval bytes each host delivered to its ring successor", hostsOut);
    cmd.Parse(argc, argv);

    if (workers < 2 || intervalNs <= 0 || durationNs <= 0 || hostRate == 0 || seed == 0 || queuePackets == 0 ||
        (topology != "star" && topology != "leafspine") || onoffShare <= 0 || onoffShare > 1 || bulk < 0 ||
        onoff < 0 || delayNs < 0 || onNs <= 0 || offNs < 0)
    {
        std::fprintf(stderr, "nfabric-telemetry: bad parameters (see --help)\n");
        return 2;
    }
    if (topology == "leafspine" && (leaves < 1 || spines < 1 || workers % leaves != 0))
    {
        std::fprintf(stderr, "nfabric-telemetry: leafspine needs workers (%d) divisible by leaves (%d)\n", workers,
                     leaves);
        return 2;
    }
    if (fabricRate == 0)
    {
        fabricRate = hostRate;
    }
    if (schedule.empty() || !ReadSchedule(schedule))
    {
        if (schedule.empty())
        {
            std::fprintf(stderr, "nfabric-telemetry: --schedule is required\n");
        }
        return 2;
    }
    g_workers = workers;
    g_intervalNs = intervalNs;
    g_intervals = static_cast<size_t>((durationNs + intervalNs - 1) / intervalNs);
    g_recvTotal.assign(workers, 0);
    g_delivered.assign(g_intervals, std::vector<uint64_t>(workers, 0));

    RngSeedManager::SetSeed(seed);
    RngSeedManager::SetRun(1);
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 20));

    NodeContainer hosts;
    hosts.Create(workers);
    NodeContainer switches;
    int nsw = topology == "star" ? 1 : leaves + spines;
    switches.Create(nsw);
    InternetStackHelper stack;
    stack.Install(hosts);
    stack.Install(switches);
    Ipv4AddressHelper addr("10.0.0.0", "255.255.255.252");
    std::vector<Ipv4Address> hostAddr(workers);
    for (int h = 0; h < workers; h++)
    {
        int sw = topology == "star" ? 0 : h / (workers / leaves);
        std::string swName = topology == "star" ? "s0" : "leaf" + std::to_string(sw);
        Ipv4InterfaceContainer ifs = Connect(hosts.Get(h), switches.Get(sw), "h" + std::to_string(h), swName,
                                             hostRate, delayNs, queuePackets, addr);
        hostAddr[h] = ifs.GetAddress(0);
    }
    if (topology == "leafspine")
    {
        for (int l = 0; l < leaves; l++)
        {
            for (int s = 0; s < spines; s++)
            {
                Connect(switches.Get(l), switches.Get(leaves + s), "leaf" + std::to_string(l),
                        "spine" + std::to_string(s), fabricRate, delayNs, queuePackets, addr);
            }
        }
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // Gradient traffic: one ring node per host.
    for (int h = 0; h < workers; h++)
    {
        Ptr<RingNode> app = CreateObject<RingNode>();
        app->m_index = h;
        app->m_peer = InetSocketAddress(hostAddr[(h + 1) % workers], kRingPort);
        hosts.Get(h)->AddApplication(app);
        app->SetStartTime(NanoSeconds(0));
    }
    // Background: flow f goes from host f mod W to the host half the ring
    // away (plus f / W), so it crosses the fabric and shares host links with
    // the ring.
    int64_t streamIndex = 1;
    for (int f = 0; f < bulk + onoff; f++)
    {
        int src = f % workers;
        int dst = (src + workers / 2 + f / workers) % workers;
        if (dst == src)
        {
            dst = (dst + 1) % workers;
        }
        bool isBulk = f < bulk;
        uint16_t port = isBulk ? kBulkPort + f : kOnOffPort + (f - bulk);
        std::string factory = isBulk ? "ns3::TcpSocketFactory" : "ns3::UdpSocketFactory";
        PacketSinkHelper sink(factory, InetSocketAddress(Ipv4Address::GetAny(), port));
        sink.Install(hosts.Get(dst)).Start(NanoSeconds(0));
        ApplicationContainer apps;
        if (isBulk)
        {
            BulkSendHelper bs(factory, InetSocketAddress(hostAddr[dst], port));
            bs.SetAttribute("MaxBytes", UintegerValue(0));
            bs.SetAttribute("SendSize", UintegerValue(segment));
            apps = bs.Install(hosts.Get(src));
        }
        else
        {
            OnOffHelper oo(factory, InetSocketAddress(hostAddr[dst], port));
            oo.SetAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(onoffShare * hostRate))));
            oo.SetAttribute("PacketSize", UintegerValue(segment));
            std::ostringstream on, off;
            on << "ns3::ExponentialRandomVariable[Mean=" << onNs * 1e-9 << "]";
            off << "ns3::ExponentialRandomVariable[Mean=" << offNs * 1e-9 << "]";
            oo.SetAttribute("OnTime", StringValue(on.str()));
            oo.SetAttribute("OffTime", StringValue(offNs == 0 ? "ns3::ConstantRandomVariable[Constant=0]" : off.str()));
            apps = oo.Install(hosts.Get(src));
            streamIndex += oo.AssignStreams(NodeContainer(hosts.Get(src)), streamIndex);
        }
        apps.Start(NanoSeconds(0));
    }

    Simulator::Schedule(NanoSeconds(intervalNs), &SampleQueues, 0);
    Simulator::Stop(NanoSeconds(durationNs + 1)); // after the last sample
    Simulator::Run();

    if (!linksOut.empty())
    {
        std::ofstream o(linksOut);
        o << "t_ns,link,rate_bps,busy_grad_ns,busy_bg_ns,queue_bytes,queue_max_bytes,drop_bytes\n";
        for (size_t k = 0; k < g_intervals; k++)
        {
            for (const LinkStat& l : g_links)
            {
                o << static_cast<int64_t>(k + 1) * intervalNs << ',' << l.name << ',' << l.bps << ',' << l.busyGrad[k]
                  << ',' << l.busyBg[k] << ',' << l.qNow[k] << ',' << l.qMax[k] << ',' << l.drops[k] << '\n';
            }
        }
        if (!o)
        {
            std::fprintf(stderr, "nfabric-telemetry: writing %s failed\n", linksOut.c_str());
            return 1;
        }
    }
    if (!bucketsOut.empty())
    {
        std::ofstream o(bucketsOut);
        o << "step,bucket,bytes,release_ns,finish_ns,sent_bytes,recv_bytes\n";
        for (const BucketState& b : g_buckets)
        {
            o << b.spec.step << ',' << b.spec.bucket << ',' << b.spec.bytes << ',' << b.spec.releaseNs << ','
              << b.finishNs << ',' << b.sent << ',' << b.recvd << '\n';
        }
        if (!o)
        {
            std::fprintf(stderr, "nfabric-telemetry: writing %s failed\n", bucketsOut.c_str());
            return 1;
        }
    }
    if (!totalsOut.empty())
    {
        std::ofstream o(totalsOut);
        o << "link,rate_bps,grad_payload_bytes,bg_payload_bytes,grad_wire_bytes,bg_wire_bytes,drop_bytes\n";
        for (const LinkStat& l : g_links)
        {
            o << l.name << ',' << l.bps << ',' << l.gradPayload << ',' << l.bgPayload << ',' << l.gradWire << ','
              << l.bgWire << ',' << l.dropBytes << '\n';
        }
        if (!o)
        {
            std::fprintf(stderr, "nfabric-telemetry: writing %s failed\n", totalsOut.c_str());
            return 1;
        }
    }
    if (!hostsOut.empty())
    {
        std::ofstream o(hostsOut);
        o << "t_ns,host,delivered_bytes\n";
        for (size_t k = 0; k < g_intervals; k++)
        {
            for (int h = 0; h < workers; h++)
            {
                o << static_cast<int64_t>(k + 1) * intervalNs << ",h" << h << ',' << g_delivered[k][h] << '\n';
            }
        }
        if (!o)
        {
            std::fprintf(stderr, "nfabric-telemetry: writing %s failed\n", hostsOut.c_str());
            return 1;
        }
    }
    Simulator::Destroy();
    return 0;
}
