"""``GET /healthz``: liveness, with what the server serves and each model's circuit breaker."""

from __future__ import annotations

from fastapi import APIRouter, Request

from reactgraph.server.schemas import Health, ModelStatus

router = APIRouter()


@router.get("/healthz", summary="Liveness")
async def healthz(request: Request) -> Health:
    """`ok` while the server runs, with the agent's mode and tool count, and the circuit
    breaker of each model when the agent has fallback models."""
    state = request.app.state
    agent = state.agent
    engine = agent.engine
    models = [ModelStatus(name=name, **breaker) for name, breaker in engine.breaker_states().items()] \
        if engine.fallbacks else []
    return Health(model_mode=agent.mode, tools=len(agent.tools), checkpoints=agent.checkpointer is not None,
                  models=models, modes=state.modes, default_mode=state.settings.default_mode,
                  examples=state.examples)
