"""The facades: the shared AgentFacade, the ReAct agent, what every run's result has."""
