#include "actorflow/net/protocol.hpp"

namespace actorflow {

void RegisterMessageTypes(caf::actor_system_config& cfg) {
  cfg.add_message_type<Tensor>("actorflow::Tensor");
  cfg.add_message_type<Status>("actorflow::Status");
  cfg.add_message_type<std::vector<Tensor>>("std::vector<actorflow::Tensor>");
  cfg.add_message_type<NodeExecStats>("actorflow::NodeExecStats");
  cfg.add_message_type<RegisterGraphRequest>("actorflow::RegisterGraphRequest");
  cfg.add_message_type<RegisterGraphResponse>("actorflow::RegisterGraphResponse");
  cfg.add_message_type<RegisterPartitionsRequest>("actorflow::RegisterPartitionsRequest");
  cfg.add_message_type<RegisterPartitionsResponse>("actorflow::RegisterPartitionsResponse");
  cfg.add_message_type<RunStepRequest>("actorflow::RunStepRequest");
  cfg.add_message_type<RunStepResponse>("actorflow::RunStepResponse");
  cfg.add_message_type<DeregisterGraph>("actorflow::DeregisterGraph");
  cfg.add_message_type<CloseSession>("actorflow::CloseSession");
  cfg.add_message_type<VarReadRequest>("actorflow::VarReadRequest");
  cfg.add_message_type<VarReadResponse>("actorflow::VarReadResponse");
  cfg.add_message_type<VarUpdateRequest>("actorflow::VarUpdateRequest");
  cfg.add_message_type<VarUpdateResponse>("actorflow::VarUpdateResponse");
  cfg.add_message_type<ResetContainersRequest>("actorflow::ResetContainersRequest");
  cfg.add_message_type<ResetContainersResponse>("actorflow::ResetContainersResponse");
  cfg.add_message_type<RendezvousSend>("actorflow::RendezvousSend");
  cfg.add_message_type<RendezvousRecv>("actorflow::RendezvousRecv");
  cfg.add_message_type<RendezvousRecvResponse>("actorflow::RendezvousRecvResponse");
  cfg.add_message_type<RendezvousBatch>("actorflow::RendezvousBatch");
  cfg.add_message_type<RendezvousDeliver>("actorflow::RendezvousDeliver");
  cfg.add_message_type<RendezvousAbort>("actorflow::RendezvousAbort");
  cfg.add_message_type<RendezvousStepDone>("actorflow::RendezvousStepDone");
  cfg.add_message_type<QueueRequest>("actorflow::QueueRequest");
  cfg.add_message_type<QueueResponse>("actorflow::QueueResponse");
  cfg.add_message_type<QueueCancelStep>("actorflow::QueueCancelStep");
  cfg.add_message_type<QueueOpenRequest>("actorflow::QueueOpenRequest");
  cfg.add_message_type<QueueOpenResponse>("actorflow::QueueOpenResponse");
  cfg.add_message_type<StatusResponse>("actorflow::StatusResponse");
  cfg.add_message_type<GetStatusRequest>("actorflow::GetStatusRequest");
  cfg.add_message_type<RemoteDeviceInfo>("actorflow::RemoteDeviceInfo");
  cfg.add_message_type<GetStatusResponse>("actorflow::GetStatusResponse");
  cfg.add_message_type<TaskPeer>("actorflow::TaskPeer");
  cfg.add_message_type<CreateWorkerSessionRequest>("actorflow::CreateWorkerSessionRequest");
  cfg.add_message_type<CreateWorkerSessionResponse>("actorflow::CreateWorkerSessionResponse");
  cfg.add_message_type<DeleteWorkerSessionRequest>("actorflow::DeleteWorkerSessionRequest");
  cfg.add_message_type<PingRequest>("actorflow::PingRequest");
  cfg.add_message_type<PingResponse>("actorflow::PingResponse");
  cfg.add_message_type<ShutdownRequest>("actorflow::ShutdownRequest");
  cfg.add_message_type<MasterCreateSessionRequest>("actorflow::MasterCreateSessionRequest");
  cfg.add_message_type<MasterCreateSessionResponse>("actorflow::MasterCreateSessionResponse");
  cfg.add_message_type<MasterExtendRequest>("actorflow::MasterExtendRequest");
  cfg.add_message_type<MasterRunRequest>("actorflow::MasterRunRequest");
  cfg.add_message_type<MasterRunResponse>("actorflow::MasterRunResponse");
  cfg.add_message_type<MasterCloseRequest>("actorflow::MasterCloseRequest");
  cfg.add_message_type<MasterResetRequest>("actorflow::MasterResetRequest");
}

}  // namespace actorflow
