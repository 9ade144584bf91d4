from .coordinator import MarkerRound, TransactionCoordinator, TxnError  # noqa: F401
from .result import Marker, TxnResult  # noqa: F401
from .state import TransactionMetadata, TxnState  # noqa: F401
